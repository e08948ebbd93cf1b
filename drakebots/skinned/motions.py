"""Generators of the paper's motions as `MotionSpec` inputs (skinned-quad-robots.txt, section 7).

- `SingleFootLift`, `DoubleFootLift`: the beetle's foot lifting motions of Fig. 10: the foot (or
  the diagonal pair) rises along its leg's own lifting path and comes back, the COM over the
  support polygon of the feet that stay down.
- `Walk`: a statically stable crawl (one foot at a time, lateral sequence rear-left, front-left,
  rear-right, front-right), as the slow walks of Figs. 1, 12, 14 and 15; the COM shifts into the
  triangle of the three stance feet before each swing. `stride` and `step_height` give the
  monster's two walks (0.11 m/s with a longer, lower step; 0.06 m/s with a shorter, higher one).
- `Trot`: a parametric trot (diagonal pairs, short flight) with a given speed, standing in for the
  paper's retargeted horse motion (Fig. 13).

All start from the robot's home stance (feet where the skeleton puts them with every joint at
zero). Units: m, s, rad.
"""

from __future__ import annotations

import numpy as np

from drakebots.errors import InputError
from drakebots.skinned.motion import FootTrack, MotionSpec
from drakebots.skinned.skeleton import LEG_NAMES


def _Home(model):
    """Home sole centres (4, 3) with z = 0, and the home COM (3,)."""
    feet, _, _, _ = model.AllFeet(model.q_home)
    feet[:, 2] = 0.0
    com, _ = model.Com(model.q_home)
    return feet, com


def _SwingPath(p0, p1, t0, t1, height, samples=7):
    """Keyframes of a swing from p0 to p1 between t0 and t1: a smooth lifted arc."""
    s = np.linspace(0.0, 1.0, samples)
    # Horizontal: smoothstep; vertical: a sine bump (zero slope at lift-off and touch-down).
    blend = s * s * (3 - 2 * s)
    pts = p0[None] + blend[:, None] * (p1 - p0)[None]
    pts[:, 2] = height * np.sin(np.pi * s) ** 1.5
    return list(t0 + s * (t1 - t0)), [list(p) for p in pts]


def _Track(events, duration):
    """FootTrack from ordered events: ('stand', t0, t1, p) and ('swing', t0, t1, p0, p1, h)."""
    times, positions, stance = [], [], []
    for event in events:
        if event[0] == "stand":
            _, t0, t1, p = event
            for t in (t0, t1):
                if not times or t > times[-1] + 1e-12:
                    times.append(t)
                    positions.append(list(p))
            stance.append([t0, t1])
        else:
            _, t0, t1, p0, p1, h = event
            ts, ps = _SwingPath(np.asarray(p0), np.asarray(p1), t0, t1, h)
            for t, p in zip(ts, ps):
                if not times or t > times[-1] + 1e-12:
                    times.append(t)
                    positions.append(p)
    if times[-1] < duration - 1e-12:
        times.append(duration)
        positions.append(positions[-1])
    # Merge touching stance intervals.
    merged = []
    for a, b in stance:
        if merged and a <= merged[-1][1] + 1e-12:
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b])
    return FootTrack(times=times, positions=positions, stance=merged)


def LegLiftPath(model, leg: int, heights) -> tuple[np.ndarray, np.ndarray]:
    """A foot lifted by its own leg, torso at home: sole centres (n, 3) and poses q (n, nq).

    For each height h (m, increasing from 0) the leg's joints solve min ||Δp_xy||² / (5 cm)² +
    100 ||n̂ - ẑ||² subject to the sole centre at height h (Gauss-Newton on the leg's joints,
    continued from the previous height): the foot rises as the leg can lift it while staying flat
    and as close as possible above where it stood. A sprawled 3-joint leg (hip yaw + two parallel
    pitch joints, the beetle and lizard) cannot lift a flat foot straight up: it swings it out
    on the knee's arc (the beetle: 10 cm outward for a 3 cm lift). Asking for "straight up"
    anyway made the space-time step pitch the foot 70-80° and recruit the torso (20° of yaw, 5°
    of stance-foot tilt), which the three planted feet cannot follow.
    """
    cols = [i for i in model.JointIndices() if model.position_names[i].startswith(LEG_NAMES[leg])]
    q = model.q_home.copy()
    home, _ = model.FootPoints(q, leg, model.sole_centers[leg])
    home = home[0]
    up = np.array([0.0, 0.0, 1.0])
    out, poses = [], []
    for h in heights:
        for _ in range(50):
            p, Jp = model.FootPoints(q, leg, model.sole_centers[leg])
            n, Jn = model.FootNormal(q, leg)
            r = np.concatenate([(p[0, :2] - home[:2]) / 0.05, 10.0 * (n - up)])
            J = np.vstack([Jp[0, :2] / 0.05, 10.0 * Jn])[:, cols]
            # Height as an equality: the minimum-norm correction, then the cost in its null space.
            a = Jp[0, 2, cols]
            c = p[0, 2] - h
            N = np.eye(len(cols)) - np.outer(a, a) / (a @ a)
            step = -a * c / (a @ a)
            JN = J @ N
            step += N @ np.linalg.lstsq(JN, -(r + J @ step), rcond=None)[0]
            q[cols] = np.clip(q[cols] + step, model.q_lower[cols], model.q_upper[cols])
            if np.abs(step).max() < 1e-10:
                break
        p, _ = model.FootPoints(q, leg, model.sole_centers[leg])
        out.append(p[0].copy())
        poses.append(q.copy())
    path = np.array(out)
    path[0, 2] = max(path[0, 2], 0.0)
    return path, np.array(poses)


def _Lift(
    model, lifted: list[int], *, height: float, duration: float, name: str, com_shift: float
) -> MotionSpec:
    feet, com = _Home(model)
    stay = [j for j in range(4) if j not in lifted]
    T = duration
    # Slow rise and fall (0.24 T each): the sprawled leg's lifting path is long (the beetle's
    # foot swings 11 cm on the knee's arc for a 4 cm lift). A 0.18 s rise (the old 0.09 T)
    # needed ~20 m/s² of foot acceleration, whose reaction rocked the three-foot stance and
    # saturated the knees bang-bang in the frame-by-frame step.
    t_shift, t_up, t_down, t_back = 0.15, 0.2, 0.8, 0.85
    t_top, t_leave = t_up + 0.4 * (t_down - t_up), t_down - 0.4 * (t_down - t_up)
    # The lifted legs' paths (`LegLiftPath`), the height a smoothstep of the path parameter.
    s = np.linspace(0.0, 1.0, 13)
    heights = height * s * s * (3 - 2 * s)
    paths, poses = {}, {}
    for j in lifted:
        paths[j], poses[j] = LegLiftPath(model, j, heights)
    # The COM plan: home, `com_shift` of the way toward the centroid of the feet that stay,
    # then the lifted legs' own COM shift along their paths (the torso stays where it is).
    centroid = feet[stay, :2].mean(axis=0)
    offset = np.zeros(3)
    offset[:2] = com_shift * (centroid - com[:2])
    lift_com = []
    for i in range(len(s)):
        q = model.q_home.copy()
        for j in lifted:
            moved = np.any(poses[j] != model.q_home, axis=0)
            q[moved] = poses[j][i][moved]
        lift_com.append(model.Com(q)[0] + offset)
    up_times = list(t_up * T + s * (t_top - t_up) * T)
    down_times = list(t_leave * T + s * (t_down - t_leave) * T)
    com_times = [0.0, 0.08 * T, t_shift * T] + up_times + down_times + [t_back * T, 0.92 * T, T]
    com_positions = [com, com, com + offset] + lift_com + lift_com[::-1]
    com_positions += [com + offset, com, com]
    com_positions = [list(c) for c in com_positions]
    tracks = {}
    for j, leg in enumerate(LEG_NAMES):
        p = feet[j]
        if j in lifted:
            # Up and back down along the leg's own lifting path, holding at the top.
            path = paths[j]
            times = [0.0, t_up * T]
            positions = [list(p), list(p)]
            for t, x in zip(t_up * T + s[1:] * (t_top - t_up) * T, path[1:]):
                times.append(float(t))
                positions.append(list(x))
            for t, x in zip(t_leave * T + s[:-1] * (t_down - t_leave) * T, path[::-1][:-1]):
                times.append(float(t))
                positions.append(list(x))
            times += [t_down * T, T]
            positions += [list(p), list(p)]
            track = FootTrack(
                times=times, positions=positions, stance=[[0.0, t_up * T], [t_down * T, T]]
            )
        else:
            track = _Track([("stand", 0.0, T, p)], T)
        tracks[leg] = track
    return MotionSpec(
        name=name,
        robot=model.robot,
        duration=T,
        com_times=com_times,
        com_positions=com_positions,
        feet=tracks,
    )


def SingleFootLift(
    model, *, leg: str = "front_left", height: float = 0.04, duration=2.0, com_shift: float = 0.0
):
    """Fig. 10(a): lift one foot along its leg's own lifting path (`LegLiftPath`), put it back.

    Args:
        height: lift height of the sole centre, m.
        com_shift: how far the COM first moves toward the centroid of the feet that stay
            (fraction). Default 0: the home COM of all four robots is already 3.4-6.4 cm inside
            the three-foot support polygon, and a torso cannot translate over planted flat feet
            on 3-joint legs (three feet x (3 position + 2 flatness) = 15 constraints on the 15
            coordinates of torso and stance legs): a shift makes the plan tilt and turn the stance
            feet onto their edges (40 % shift: 1-4° tilts, 25° of torso yaw), which the sole
            contact of the frame-by-frame step cannot follow.
    """
    return _Lift(
        model,
        [LEG_NAMES.index(leg)],
        height=height,
        duration=duration,
        name="single-foot-lift",
        com_shift=com_shift,
    )


def DoubleFootLift(model, *, height: float = 0.03, duration=2.0, com_shift: float = 0.0):
    """Fig. 10(b): lift the diagonal pair front-left + rear-right on the other diagonal.

    The home COM lies on the other diagonal (the skeletons are symmetric), so the COM need not
    move (see `SingleFootLift`)."""
    return _Lift(
        model,
        [LEG_NAMES.index("front_left"), LEG_NAMES.index("rear_right")],
        height=height,
        duration=duration,
        name="double-foot-lift",
        com_shift=com_shift,
    )


# Per-robot default stride of `Walk`, m (the cycle period is then stride / speed). The monster's
# legs hang straight under the hips (horizontal reach 0.189 m), so its knees and hips carry a
# stance foot's load (~40 N on three feet for 11.87 kg) on the foot's horizontal offset from the
# hip: with 1.96 N*m motors the foot must stay within ~5 cm of it. The generic 2.4 s cycle at the
# paper's 0.06 m/s made a 14.4 cm stride (feet 7 cm ahead of / behind the hip): the motors sat at
# U_m on 451 of 480 frames and the space-time steps were dual-infeasible; at 0.11 m/s (26 cm) a
# foot left the leg's reach. A 6 cm stride (1 s cycle at 0.06 m/s) succeeds (measured).
WALK_STRIDE = {"monster": 0.06}


def Walk(
    model,
    *,
    speed: float = 0.015,
    stride: float | None = None,
    step_height: float = 0.02,
    period: float | None = None,
    shift_fraction: float = 0.3,
    swing_fraction: float = 0.55,
) -> MotionSpec:
    """A statically stable crawl cycle (periodic), one foot at a time.

    Defaults (a slow beetle crawl, 3.6 cm stride in 2.4 s) from measurements on the beetle:
    the earlier 0.04 m/s, 2 s cycle with 0.23 s swings and a 60 % COM shift needed foot
    accelerations of ~10 m/s² and torso shifts its 3-joint legs cannot make with planted flat
    feet; its space-time step did not converge and the frame-by-frame motion left the plan by
    33° (RMS 1.5 scaled). With these defaults the two agree after one iteration (RMS 0.82).

    Args:
        speed: average forward speed, m/s.
        stride: how far each foot moves per cycle, m (default: from speed and period, or the
            robot's `WALK_STRIDE` when neither stride nor period is given).
        step_height: swing height, m.
        period: cycle duration, s (default: stride / speed, or 2.4 s).
        shift_fraction: how far toward the three-foot centroid the COM moves before a swing.
        swing_fraction: the part of each quarter cycle a foot swings (the COM shift takes
            0.4 of it first).
    """
    if not 0.0 < swing_fraction < 0.6:
        raise InputError(f"swing_fraction must be in (0, 0.6), got {swing_fraction}")
    if not speed > 0.0:
        raise InputError(f"--speed must be > 0 m/s for a walk, got {speed}")
    if stride is None and period is None:
        stride = WALK_STRIDE.get(model.robot)
    if period is None:
        period = stride / speed if stride else 2.4
    stride = speed * period
    feet, com = _Home(model)
    order = [
        LEG_NAMES.index(leg) for leg in ("rear_left", "front_left", "rear_right", "front_right")
    ]
    T = period
    # Each quarter: COM shift (first 40%), swing (next 45%), settle.
    quarter = T / 4
    swing_time = swing_fraction * quarter
    events = {j: [] for j in range(4)}
    position = {j: feet[j].copy() for j in range(4)}
    last = {j: 0.0 for j in range(4)}
    com_times, com_positions = [0.0], [list(com)]
    for q_index, j in enumerate(order):
        t0 = q_index * quarter
        ts, te = t0 + 0.4 * quarter, t0 + 0.4 * quarter + swing_time
        # The body advances uniformly; the COM also shifts sideways toward the stance triangle.
        others = [i for i in range(4) if i != j]
        tri = np.array([position[i] for i in others])[:, :2].mean(axis=0)
        base = com[:2] + np.array([speed * ts, 0.0])
        shifted = base + shift_fraction * (tri - base)
        shifted[0] = 0.5 * (shifted[0] + base[0])
        com_times += [ts, te]
        com_positions += [
            [shifted[0], shifted[1], com[2]],
            [shifted[0] + speed * swing_time, shifted[1], com[2]],
        ]
        target = position[j] + np.array([stride, 0.0, 0.0])
        events[j].append(("stand", last[j], ts, position[j].copy()))
        events[j].append(("swing", ts, te, position[j].copy(), target, step_height))
        position[j] = target
        last[j] = te
    # The cycle's seam: the COM moves from the last swing's shift to the first one's as between
    # the other swings (the ease of two keyframes with level ends, 3 s² - 2 s³, over the same 0.45
    # of a quarter), and t = 0 (and T, one displacement on) is a point of that move. Returning
    # to the centre at T instead squeezed a 1.3 cm sideways move into the last 0.03 s of the
    # lizard's 2.4 s cycle: 13 m/s² in its plan.
    shift = np.array([speed * T, 0.0, 0.0])
    before_t, before = com_times[-1] - T, np.array(com_positions[-1]) - shift
    after_t, after = com_times[1], np.array(com_positions[1])
    s = (0.0 - before_t) / (after_t - before_t)
    seam = before + (3 * s**2 - 2 * s**3) * (after - before)
    com_positions[0] = seam.tolist()
    com_times.append(T)
    com_positions.append((seam + shift).tolist())
    tracks = {}
    for j, leg in enumerate(LEG_NAMES):
        events[j].append(("stand", last[j], T, position[j].copy()))
        tracks[leg] = _Track(events[j], T)
    return MotionSpec(
        name="walk",
        robot=model.robot,
        duration=T,
        periodic=True,
        com_times=com_times,
        com_positions=com_positions,
        feet=tracks,
        speed=speed,
    )


def _PeriodicFoot(home, phase, stance_time, T, speed, height, samples=48) -> FootTrack:
    """A foot of a periodic gait: on the ground for stance_time from `phase` (mod T), then a
    swing to its next foothold; footholds put mid-stance under the hip of a body moving at speed.
    """

    def foothold(c):
        return home[0] + speed * (phase + 0.5 * stance_time + c * T)

    def position(t):
        c = np.floor((t - phase) / T)
        tau = (t - phase) - c * T
        if tau <= stance_time:
            return np.array([foothold(c), home[1], 0.0]), True
        s = (tau - stance_time) / (T - stance_time)
        blend = s * s * (3 - 2 * s)
        x = foothold(c) + blend * (foothold(c + 1) - foothold(c))
        return np.array([x, home[1], height * np.sin(np.pi * s) ** 1.5]), False

    events = {0.0, T}
    for c in (-1, 0, 1):
        for t in (phase + c * T, phase + stance_time + c * T):
            if 0.0 < t < T:
                events.add(t)
    times = sorted(events | set(np.linspace(0.0, T, samples + 1)))
    times = [t for i, t in enumerate(times) if i == 0 or t - times[i - 1] > 1e-6]
    positions = [list(position(t)[0]) for t in times]
    stance = []
    for c in (-1, 0, 1):
        a, b = phase + c * T, phase + stance_time + c * T
        a, b = max(a, 0.0), min(b, T)
        if b > a + 1e-9:
            stance.append([a, b])
    return FootTrack(times=[float(t) for t in times], positions=positions, stance=stance)


def Trot(
    model,
    *,
    speed: float = 0.45,
    period: float = 0.4,
    duty: float = 0.45,
    step_height: float = 0.03,
    com_lead: float = 0.0,
) -> MotionSpec:
    """A parametric trot cycle (periodic): diagonal pairs alternate, with short flight phases.

    Args:
        speed: forward speed, m/s (paper: 0.45 for the monster).
        period: cycle duration, s.
        duty: fraction of the cycle each foot is on the ground (< 0.5 gives flight phases).
        step_height: swing height, m.
        com_lead: how far the planned COM runs ahead of its home place over the feet, m (ours:
            a stand-in for the paper's trot retargeted from Muybridge's horse, whose forelegs
            carry more of its weight; 0 puts it where the robot stands).
    """
    if not speed > 0.0:
        raise InputError(f"--speed must be > 0 m/s for a trot, got {speed}")
    if not abs(com_lead) < 0.1:
        raise InputError(f"--com-lead must be under 0.1 m either way, got {com_lead} m")
    feet, com = _Home(model)
    com = com + [com_lead, 0.0, 0.0]
    T = period
    phases = {"front_left": 0.0, "rear_right": 0.0, "front_right": 0.5 * T, "rear_left": 0.5 * T}
    tracks = {
        leg: _PeriodicFoot(feet[LEG_NAMES.index(leg)], phases[leg], duty * T, T, speed, step_height)
        for leg in LEG_NAMES
    }
    return MotionSpec(
        name="trot" if com_lead == 0.0 else f"trot (COM {1e3 * com_lead:+.0f} mm ahead)",
        robot=model.robot,
        duration=T,
        periodic=True,
        com_times=[0.0, T],
        com_positions=[list(com), list(com + [speed * T, 0.0, 0.0])],
        feet=tracks,
        speed=speed,
    )
