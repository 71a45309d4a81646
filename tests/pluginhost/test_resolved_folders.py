"""A package folder's resolution (symlinks followed) is remembered for a few seconds, so that
every plugin call does not resolve it again; a folder re-pointed on disk is seen after that."""

from __future__ import annotations

from pluginhost import pool


def test_a_folder_is_resolved_once_then_seen_afresh_after_the_ttl(tmp_path, monkeypatch):
    first, second = tmp_path / "first", tmp_path / "second"
    first.mkdir()
    second.mkdir()
    link = tmp_path / "package"
    link.symlink_to(first)
    assert pool.resolved(link) == first.resolve()

    link.unlink()
    link.symlink_to(second)
    # Within the TTL the remembered answer stands (what saves the system calls) ...
    assert pool.resolved(link) == first.resolve()
    # ... and once it has passed, the folder's new target is what counts.
    monkeypatch.setattr(pool, "RESOLVE_TTL_SECONDS", 0.0)
    assert pool.resolved(link) == second.resolve()


def test_trust_follows_a_link_into_the_bundled_folder(tmp_path, settings, monkeypatch):
    monkeypatch.setattr(pool, "RESOLVE_TTL_SECONDS", 0.0)
    bundled = tmp_path / "bundled"
    (bundled / "dice").mkdir(parents=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    settings.COVEL_BUNDLED_PLUGINS_DIR = str(bundled)
    link = tmp_path / "dice-link"
    link.symlink_to(bundled / "dice")
    assert pool.folder_trust(link) == "bundled"
    link.unlink()
    link.symlink_to(elsewhere)
    assert pool.folder_trust(link) == "community"
