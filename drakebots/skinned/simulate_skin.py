"""The `skin` option of `drakebots.Simulate` (`drakebots simulate --skin`) for skinned quad-robots:
skeleton and FEM skin coupled (drakebots.skinned.simulation), with the skin in the replay and a
ParaView series.
"""

import shutil
from pathlib import Path

import numpy as np

from drakebots.errors import InputError

# Skin frames written to the ParaView series (skin.pvd + frames/*.vtu), per simulated second.
VTU_FRAMES_PER_SECOND = 10


# `--skin generate`: make the robot's default skin first (as `drakebots skin ROBOT` would).
GENERATE = "generate"


def LoadSkinFor(folder: str, robot, progress=None):
    """Loads and checks a skin folder for `robot` (InputError names what is wrong); the value
    "generate" makes the robot's default skin instead (reported through `progress`)."""
    from drakebots.skinned.skeleton import _Build
    from drakebots.skinned.skin import SKIN_FILES, LoadSkin, MakeSkin, SkinInputError

    if folder == GENERATE:
        from drakebots.workflow import Reporter

        Reporter(progress).Say(f"generating the {robot.name} skin (drakebots skin {robot.name})")
        return MakeSkin(robot.params)
    path = Path(folder)
    if not path.is_dir():
        raise InputError(f"--skin {folder}: not a folder (make one with `drakebots skin`)")
    try:
        skin = LoadSkin(path)
    except (SkinInputError, ValueError, KeyError) as e:
        raise InputError(f"--skin {folder}: {e}") from None
    if skin.robot != robot.name:
        raise InputError(
            f"--skin {folder}: the skin was made for '{skin.robot}', not '{robot.name}'"
        )
    links = set(_Build(robot.params).links)
    orphans = [k for k, name in enumerate(skin.glue_links) if name not in links]
    if orphans:
        k = orphans[0]
        raise InputError(
            f"--skin {folder}/skin.npz: {len(orphans)} glue vertices attach to no link of "
            f"'{robot.name}', e.g. glue vertex #{k} (mesh vertex {skin.glue_vertices[k]}) on "
            f"'{skin.glue_links[k]}'"
        )
    if len(skin.glue_vertices) == 0:
        raise InputError(f"--skin {folder}: the skin has no glue vertices")
    _ = SKIN_FILES
    return skin


def SkinContact(scenario) -> str:
    """CouplingConfig.contact for the scenario's `skin_contact` ("": "active_set"); InputError
    for a name CouplingConfig does not know, or for one given without a skin."""
    from drakebots.skinned.skin_coupling import ContactNamed

    if not scenario.skin_contact:
        return "active_set"
    ContactNamed(scenario.skin_contact, "--skin-contact")
    if not scenario.skin:
        raise InputError("--skin-contact needs --skin (the skin whose contact it chooses)")
    return scenario.skin_contact


def SimulateWithSkin(scenario, robot, *, meshcat=None, progress=None):
    from drakebots.fem.mesh import WritePvd, WriteVtu
    from drakebots.skinned.plots import SkinReplayDecorator
    from drakebots.skinned.simulation import SimulateSkinned, SkinnedConfig
    from drakebots.systems.simulate import LazyFigures, SimulationOutcome

    if scenario.drop_height != 0.0:
        raise InputError(
            "--drop-height is not supported with --skin (the skin starts on the floor)"
        )
    if scenario.ground_friction <= 0.0:
        raise InputError(f"--ground-friction must be > 0, got {scenario.ground_friction}")
    skin = LoadSkinFor(scenario.skin, robot, progress)
    time_step = scenario.time_step or 0.005
    config = SkinnedConfig(
        duration=scenario.duration,
        time_step=time_step,
        log_period=scenario.log_period or time_step,
        ground_friction=scenario.ground_friction,
        contact=SkinContact(scenario),
    )
    run = SimulateSkinned(robot, skin, config, meshcat=meshcat, progress=progress)
    log = run.log
    figures = log.Summary()
    lift = float(log.extra["skin_lift"])
    nominal = robot.nominal_base_height + lift
    stats = run.stats
    summary = {
        "nominal_base_height": nominal,
        "skin_sole_lift": lift,
        "base_height_drift": figures["base_height_end"] - nominal,
        "skin_vertices": int(skin.mesh.num_vertices),
        "skin_tets": int(skin.mesh.num_tets),
        "glue_vertices": int(len(skin.glue_vertices)),
        "skin_mass": float(run.stepper.fem.TotalMass()),
        "glue_residual_max": float(stats[:, 2].max()) if len(stats) else 0.0,
        "newton_iterations_mean": float(stats[:, 0].mean()) if len(stats) else 0.0,
        "factorizations_total": int(stats[:, 1].sum()) if len(stats) else 0,
        "skin_penetration_max": float(stats[:, 3].max()) if len(stats) else 0.0,
        "contact_vertices_mean": float(stats[:, 4].mean()) if len(stats) else 0.0,
        "step_wall_time_mean": figures["wall_time_s"] / max(1, len(stats)),
    }
    failure = run.failure
    if failure is None:
        if not figures["finite_state"]:
            failure = "the state became NaN or infinite"
        elif abs(figures["base_height_min"] - nominal) > 0.1 * nominal:
            failure = "the base left the ±10 % band around its nominal height (the robot fell)"
        elif summary["glue_residual_max"] > 1e-8:
            failure = f"glue residual {summary['glue_residual_max']:.3g} m > 1e-8 m"
    # Replay: the skin at the logged skin frames; ParaView: a .vtu series.
    frames = run.skin_frames
    sample_of_frame = np.searchsorted(log.times, run.skin_times, side="left")
    decorator = SkinReplayDecorator(skin.mesh.tets, skin.outer, frames, sample_of_frame)
    files = {}
    import tempfile

    entries = []
    with tempfile.TemporaryDirectory() as tmp:
        every = max(1, int(round(len(frames) / max(1, VTU_FRAMES_PER_SECOND * config.duration))))
        for k in range(0, len(frames), every):
            name = f"frames/skin_{k:04d}.vtu"
            displacement = (frames[k] - skin.mesh.vertices.ravel()).reshape(-1, 3)
            WriteVtu(
                Path(tmp) / "f.vtu",
                frames[k],
                skin.mesh.tets,
                point_data={"displacement": displacement},
            )
            files[name] = (Path(tmp) / "f.vtu").read_bytes()
            entries.append((float(run.skin_times[k]), name))
        WritePvd(Path(tmp) / "skin.pvd", entries)
        files["skin.pvd"] = (Path(tmp) / "skin.pvd").read_text()
    with tempfile.TemporaryDirectory() as tmp:
        from drakebots.skinned.skin import WriteSkin

        WriteSkin(tmp, skin)
        for name in ("skin.vtk", "skin.npz", "skin.json"):
            files[f"skin/{name}"] = (Path(tmp) / name).read_bytes()
    return SimulationOutcome(
        log=log,
        summary=summary,
        failure=failure,
        nominal_base_height=nominal,
        decorator=decorator,
        files=files,
        figures=LazyFigures({"coupled_steps.png": lambda: _PlotSteps(run)}),
    )


def _PlotSteps(run):
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 3, figsize=(12, 3.2))
    t = run.stats_times
    axes[0].semilogy(t, np.maximum(run.stats[:, 2], 1e-17), lw=0.8)
    axes[0].axhline(1e-8, color="tab:red", ls="--", lw=0.8, label="1e-8 m")
    axes[0].set_title("glue residual after each step [m]", fontsize=9)
    axes[0].legend(fontsize=7)
    axes[1].plot(t, run.stats[:, 0], lw=0.8, label="Newton iterations")
    axes[1].plot(t, run.stats[:, 1], lw=0.8, label="factorisations")
    axes[1].set_title("per step", fontsize=9)
    axes[1].legend(fontsize=7)
    axes[2].plot(t, 1000 * run.stats[:, 3], lw=0.8)
    axes[2].set_title("max skin penetration [mm]", fontsize=9)
    for ax in axes:
        ax.set_xlabel("time [s]", fontsize=8)
        ax.tick_params(labelsize=7)
    fig.tight_layout()
    return fig


def SkinReplayExtras(results_dir, robot):
    """(decorator, None) for `drakebots view` of a skinned run, or None if it has no skin."""
    from drakebots.skinned.plots import SkinReplayDecorator
    from drakebots.skinned.skin import LoadSkin

    folder = Path(results_dir)
    if not (folder / "skin" / "skin.vtk").is_file():
        return None
    skin = LoadSkin(folder / "skin")
    with np.load(folder / "log.npz") as data:
        if "extra_skin_frames" not in data.files:
            return None
        frames = data["extra_skin_frames"]
        times = data["times"]
        skin_times = data["extra_skin_times"]
    sample = np.searchsorted(times, skin_times, side="left")
    return SkinReplayDecorator(skin.mesh.tets, skin.outer, frames, sample), None


_ = shutil
