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
