"""The timing store through the binding: rows, stats, best, export/import,
prune, forget, check — the engine_db_* calls of the C library."""

import json

import numpy as np
import pytest

import quicksilver as qs


@pytest.fixture
def filled(tmp_path, stack):
    """An engine on a store file with 3 serial and 2 threaded_static runs of
    roberts_cross on one key and 1 serial run of esrrf."""
    e = qs.Engine(db=tmp_path / "t.db", opencl=False, calibration=False)
    for _ in range(3):
        e.run("roberts_cross", stack, impl="serial")
    for _ in range(2):
        e.run("roberts_cross", stack, impl="threaded_static")
    e.run("esrrf", stack, impl="serial", magnification=2)
    yield e
    e.close()


def test_rows(filled):
    rows = filled.db_rows(method="roberts_cross")
    assert len(rows) == 5
    assert [r.impl for r in rows].count("serial") == 3
    assert all(r.status == "ok" and r.wall > 0 and r.error == "" for r in rows)
    assert rows[0].stamp >= rows[-1].stamp  # newest first
    assert rows[0].key.startswith("roberts_cross(8x24x20")
    assert len(filled.db_rows(limit=2)) == 2
    es = filled.db_rows(method="esrrf")
    assert len(es) == 1 and json.loads(es[0].params)["magnification"] == 2
    assert filled.db_rows(method="rgc") == []


def test_stats(filled):
    st = {s.impl: s for s in filled.db_stats(method="roberts_cross")}
    assert set(st) == {"serial", "threaded_static"}
    assert (st["serial"].count, st["threaded_static"].count) == (3, 2)
    walls = sorted(r.wall for r in filled.db_rows(method="roberts_cross",
                                                  impl="serial"))
    assert st["serial"].min == pytest.approx(walls[0])
    assert st["serial"].median == pytest.approx(walls[1])
    assert st["serial"].failed == 0 and st["serial"].status == "ok"


def test_best_is_the_engine_choice(filled, stack):
    best = {b.method: b for b in filled.db_best()}
    assert set(best) == {"roberts_cross", "esrrf"}
    b = best["roberts_cross"]
    est = {x.impl: x.seconds for x in b.choice.estimates
           if x.seconds is not None}
    # the best known is the fastest estimate; the choice may be a rival
    # the rule still tries (its optimistic bound beats the best)
    assert b.impl == min(est, key=est.get)
    assert b.seconds == est[b.impl]
    assert b.choice.impl in (b.impl, b.next)
    assert b.choice.impl == filled.estimate(
        "roberts_cross", stack, impl="serial,threaded_static").impl


def test_best_names_the_best_while_a_rival_is_tried(filled, tmp_path):
    """3 serial runs of 10 ms and one threaded_static run of 12 ms on a
    key: threaded_static's optimistic bound (half its one run) beats
    serial, so the next call tries it; the best known is still serial.
    Every estimate carries the rule's verdict and its bound."""
    path = tmp_path / "export.json"
    filled.db_export(path)
    doc = json.loads(path.read_text())
    rc = [r for r in doc["runs"] if r["method"] == "roberts_cross"]
    one = {r["impl"]: r for r in rc}
    runs = []
    for impl, wall, n in (("serial", 0.010, 3), ("threaded_static", 0.012,
                                                   1)):
        for k in range(n):
            runs.append(dict(one[impl], wall=wall,
                             stamp=one[impl]["stamp"] + k + 1))
    doc["runs"] = runs
    made = tmp_path / "made.json"
    made.write_text(json.dumps(doc))
    with qs.Engine(db=tmp_path / "m.db", opencl=False, threads=2) as e:
        assert e.db_import(made) == (4, 0, 0)
        (b,) = e.db_best()
        assert b.impl == "serial"
        assert b.seconds == pytest.approx(0.010)
        assert b.next == "threaded_static"
        assert b.choice.impl == "threaded_static"
        assert b.choice.reason == "exploration"
        est = {x.impl: x for x in b.choice.estimates}
        assert est["serial"].state == "best"
        assert est["serial"].optimistic == pytest.approx(0.010 * (1 - 0.5 / 3))
        assert est["threaded_static"].state == "next"
        assert est["threaded_static"].optimistic == pytest.approx(0.006)
        assert est["threaded"].state == "cold"
        assert est["threaded"].seconds is None
        # untimed, its bound is its siblings' prior: serial's bound less
        # 1 ms of fixed cost, over the engine's 2 threads, which could
        # still beat serial
        assert est["threaded"].optimistic == pytest.approx(
            (0.010 * (1 - 0.5 / 3) - 0.001) / 2)
        (r,) = e.db_best(key=b.key)
        assert r.impl == "serial"


def test_report_estimates_carry_the_verdict(tmp_path, stack):
    """A run's report: the implementation forced is "forced", the others
    not selected, each with its bound (None: no candidate)."""
    with qs.Engine(db=tmp_path / "v.db", opencl=False) as e:
        rep = e.run("roberts_cross", stack, impl="serial").report
        est = {x.impl: x for x in rep.estimates}
        assert est["serial"].state == "forced"
        assert est["threaded"].state == "not_selected"
        assert est["threaded"].optimistic is None


def test_export_forget_import(filled, tmp_path):
    path = tmp_path / "export.json"
    filled.db_export(path)
    doc = json.loads(path.read_text())
    assert doc  # a JSON document
    assert filled.db_forget(method="roberts_cross", impl="serial") == 3
    assert len(filled.db_rows(method="roberts_cross")) == 2
    added, skipped, rejected = filled.db_import(path)
    assert (added, skipped, rejected) == (3, 3, 0)
    assert len(filled.db_rows()) == 6


def test_import_of_a_malformed_document_changes_nothing(filled, tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(qs.Error):
        filled.db_import(bad)
    assert len(filled.db_rows()) == 6


def test_prune_and_check(filled):
    assert filled.db_prune(keep=1) == 3  # 2 serial + 1 threaded_static
    assert len(filled.db_rows(method="roberts_cross")) == 2
    assert filled.db_prune(older_than_days=365) == 0
    filled.db_check()
    with pytest.raises(qs.ParameterError):
        filled.db_prune(keep=-1)


def test_timings_persist_across_engines(tmp_path, stack):
    with qs.Engine(db=tmp_path / "p.db", opencl=False) as e:
        e.run("roberts_cross", stack, impl="serial")
    with qs.Engine(db=tmp_path / "p.db", opencl=False) as e:
        assert len(e.db_rows(method="roberts_cross", impl="serial")) == 1


def test_best_leaves_out_calibration_slices(tmp_path, stack):
    """A cold automatic call calibrates on slices recorded under marked
    keys; db_best lists the caller's key only unless asked for slices."""
    with qs.Engine(db=tmp_path / "c.db", opencl=False) as e:
        e.run("roberts_cross", stack)
        keys = {r.key for r in e.db_rows(method="roberts_cross")}
        slice_keys = {k for k in keys if k.endswith("#slice")}
        assert slice_keys, keys  # calibration ran on slices
        mine = [b.key for b in e.db_best()]
        assert mine == [k for k in keys if not k.endswith("#slice")]
        every = {b.key for b in e.db_best(slices=True)}
        assert every == keys
