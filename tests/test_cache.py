"""drakebots.cache: generated files go to drakebots' own folder, named by what they are made of."""

from drakebots.cache import CacheDirectory, CacheEntry, SafeName


def test_cache_folder_follows_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("DRAKEBOTS_CACHE_DIR", str(tmp_path / "c"))
    assert CacheDirectory() == tmp_path / "c"
    monkeypatch.delenv("DRAKEBOTS_CACHE_DIR")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "x"))
    assert CacheDirectory() == tmp_path / "x" / "drakebots"


def test_names_from_files_are_never_paths():
    for name in ("../other/x", "/elsewhere/notes", "a/../../b", "..", ""):
        safe = SafeName(name)
        assert "/" not in safe and safe not in ("", ".", "..")


def test_entries_differ_by_content_and_repeat_for_the_same(tmp_path, monkeypatch):
    monkeypatch.setenv("DRAKEBOTS_CACHE_DIR", str(tmp_path))
    a = CacheEntry("meshes", [b"mesh one", "v1"], "../foot")
    assert a.is_dir() and tmp_path in a.parents
    assert CacheEntry("meshes", [b"mesh one", "v1"], "../foot") == a
    assert CacheEntry("meshes", [b"mesh two", "v1"], "../foot") != a
    # Length-prefixed parts: ("ab", "c") and ("a", "bc") are different inputs.
    assert CacheEntry("k", ["ab", "c"]) != CacheEntry("k", ["a", "bc"])


def test_writers_of_one_cache_file_at_once_each_finish_and_leave_one_whole_file(tmp_path):
    """Processes share the cache (a sweep's workers load one robot at once): each writer of the
    same entry must finish, and the file must end whole, one writer's bytes, with no temporary
    file left. A fixed temporary name failed this (the second writer truncated the first's file,
    whose rename then took it away: FileNotFoundError)."""
    import threading

    from drakebots.cache import WriteCacheFile

    path = tmp_path / "model.obj"
    contents = [bytes([65 + k]) * (1 << 20) for k in range(8)]
    barrier = threading.Barrier(len(contents))
    errors = []

    def Write(data):
        barrier.wait()
        try:
            for _ in range(20):
                WriteCacheFile(path, data)
        except Exception as e:  # noqa: BLE001 - the test reports every writer's failure
            errors.append(repr(e))

    threads = [threading.Thread(target=Write, args=(data,)) for data in contents]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert path.read_bytes() in contents
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.obj"]
    # A file that already holds the bytes is left as it is (its inode kept).
    inode = path.stat().st_ino
    WriteCacheFile(path, path.read_bytes())
    assert path.stat().st_ino == inode
    WriteCacheFile(path, "text")
    assert path.read_text() == "text" and oct(path.stat().st_mode & 0o777) == "0o644"


def test_a_write_stopped_before_its_rename_leaves_the_old_file_and_no_temporary(
    tmp_path, monkeypatch
):
    """drakebots.files.WriteWhole (cache entries, a sweep's records, a replay's checkpoint):
    Ctrl-C after the data went to disk but before the rename leaves the file as it was, whole,
    and takes its temporary file away; a write that finishes replaces it."""
    import os

    import pytest

    from drakebots import files

    path = tmp_path / "checkpoint.npz"
    path.write_bytes(b"old" * 1000)
    rename = os.replace

    def Interrupted(source, target):
        assert open(source, "rb").read() == b"new" * 1000  # the data was written in full
        raise KeyboardInterrupt

    monkeypatch.setattr(files.os, "replace", Interrupted)
    with pytest.raises(KeyboardInterrupt):
        files.WriteWhole(path, b"new" * 1000)
    assert path.read_bytes() == b"old" * 1000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.npz"]
    monkeypatch.setattr(files.os, "replace", rename)
    files.WriteWhole(path, "new")
    assert path.read_text() == "new" and oct(path.stat().st_mode & 0o777) == "0o644"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["checkpoint.npz"]
