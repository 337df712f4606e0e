#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""The system experiments' own arithmetic, without a testbed (~1 s): the
paper's per-session damage averages (tables.aggregate), the report's
reading of rows written before them (report_tables.normalise), the
offered load of the smoothed pacings (report_tables.session_offered), the
required prefix of prefix_measured.py, the per-segment binning of
arrivals.py and the showdown report's merging of runs.  Run as SCRIPT SERVER PROXY (the system tests' convention;
the programs are not used)."""
import os
import sys
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
EXP = os.path.join(HERE, "..", "..", "experiments", "system")
sys.path.insert(0, EXP)
sys.path.insert(0, os.path.join(HERE, "..", "..", "experiments", "showdown"))

import arrivals  # noqa: E402
import prefix_measured  # noqa: E402
import report  # noqa: E402  (the showdown's)
import report_tables  # noqa: E402
import tables  # noqa: E402


def merge(ef, eg, gmax, gavg, cmax, cavg):
    return {"E_f": ef, "E_g": eg, "G_max": gmax, "G_avg": gavg, "G_con_max": cmax,
            "G_con_avg": cavg, "G_con_total": round(cavg * eg)}


class Aggregate(unittest.TestCase):
    def test_paper_averages(self):
        # two damaged sessions, two clean ones
        ms = [merge(30, 5, 11, 6.0, 9, 4.0), merge(10, 5, 3, 2.0, 2, 1.0),
              merge(0, 0, 0, 0.0, 0, 0.0), merge(0, 0, 0, 0.0, 0, 0.0)]
        a = tables.aggregate(ms)
        # E_f, E_g over all four sessions
        self.assertEqual(a["E_f"], 10.0)
        self.assertEqual(a["E_g"], 2.5)
        # per-GOP figures over the two damaged sessions only
        self.assertEqual(a["G_max"], 7.0)
        self.assertEqual(a["G_avg"], 4.0)
        self.assertEqual(a["G_con_max"], 5.5)
        self.assertEqual(a["G_con_avg"], 2.5)
        # the sums and the pooled / largest figures
        self.assertEqual((a["E_f_sum"], a["E_g_sum"]), (40, 10))
        self.assertEqual((a["G_max_all"], a["G_con_max_all"]), (11, 9))
        self.assertEqual(a["G_avg_all"], 4.0)
        self.assertEqual(a["G_con_total"], 25)
        self.assertEqual(a["G_con_avg_all"], 2.5)

    def test_no_damage(self):
        a = tables.aggregate([merge(0, 0, 0, 0.0, 0, 0.0)] * 3)
        for k in ("E_f", "E_g", "G_max", "G_avg", "G_con_max", "G_con_avg", "E_f_sum"):
            self.assertEqual(a[k], 0, k)

    def test_legacy_row(self):
        old = {"n": 4, "mode": "tcp", "factor": 1.0, "segment_s": 20.0, "E_f": 40,
               "E_g": 10, "G_max": 11, "G_avg": 4.0, "G_con_max": 9, "G_con_avg": 2.5,
               "capacity_bps": 1e6, "sum_mean_bps": 5e5}
        r = report_tables.normalise(old)
        self.assertEqual((r["E_f"], r["E_g"]), (10.0, 2.5))
        self.assertEqual((r["E_f_sum"], r["G_max_all"]), (40, 11))
        self.assertIsNone(r["G_max"])
        self.assertEqual((r["size_by"], r["policy"], r["load"]), ("peak", "i", 0.5))
        # a row in the paper's metrics is left alone
        new = dict(tables.aggregate([merge(8, 2, 5, 4.0, 3, 2.0)]), **{
            k: old[k] for k in ("n", "mode", "factor", "segment_s", "capacity_bps")})
        self.assertEqual(report_tables.normalise(new)["E_f"], 8.0)


class Offered(unittest.TestCase):
    def test_constant_total(self):
        # 3 minutes: a busy first minute (3x), then quiet; GOP of 12
        frames = [("I" if k % 12 == 0 else "P" if k % 3 == 0 else "B", k * 40,
                   int((3 if k < 1500 else 1) * (20000 if k % 12 == 0 else 4000)))
                  for k in range(4500)]
        smooth, _ = report_tables.session_offered(frames, 60, "smooth")
        total, R = report_tables.session_offered(frames, 60, "total")
        # smoothed per flow, the session follows its minutes; the total
        # pacing offers the same in each
        self.assertGreater(smooth[0], 2 * smooth[1])
        self.assertTrue(all(abs(v - total[0]) < total[0] * 0.02 for v in total), total)
        # R (the sender's bytes): at least the mean total x 1.01, and the
        # busy minute's enhanced frames (due by 120 s) sent by then beside
        # two minutes of essential at S/(T(1−p̂))
        rec = lambda b: b + 68
        rtp = lambda b: rec(b) + 20 * -(-rec(b) // 1380)
        ess = [sum(rec(b) for t, ms, b in frames[m * 1500:(m + 1) * 1500] if t == "I")
               * 8 / 60 / 0.95 for m in range(3)]
        enh = [sum(rtp(b) for t, ms, b in frames[m * 1500:(m + 1) * 1500] if t != "I")
               * 8 for m in range(3)]
        # cTCP sends segment k in [57k, 57(k+1)) s at S/(T(1−p̂))
        self.assertGreaterEqual(R, (sum(ess) * 57 + sum(enh)) / 180 * 1.01 * 0.9999)
        self.assertGreaterEqual(R * 120 - (ess[0] + ess[1]) * 57 - ess[2] * 6,
                                enh[0] * 0.9999)
        # a lead of 15 s: the busy minute's frames are due sooner, R rises
        _, R15 = report_tables.session_offered(frames, 60, "total", lead=15)
        self.assertGreater(R15, R * 1.05)
        self.assertGreaterEqual(R15 * 75 - (ess[0] * 57 + ess[1] * 18), enh[0] * 0.9999)


class Prefix(unittest.TestCase):
    def test_required_prefix(self):
        # 3 segments of 10 s, 100 B each; segment 0 pre-staged (skip 1);
        # segment 1 arrives by 10 s, segment 2 half by 20 s, the rest at 25 s
        seg, sec = [100, 100, 100], [10] * 30
        started = 0
        arr = [(5_000_000, 1, 100), (15_000_000, 2, 50), (25_000_000, 2, 50)]
        b, s, late, worst, never, whole = prefix_measured.required_prefix(
            seg, sec, arr, started, 0.0, 10.0, 1)
        # shortfall at 20 s: 300 − 150 = 150 B, = 15 s of 10 B/s
        self.assertEqual((b, s), (150, 15))
        self.assertEqual((late, never, whole), (1, 0, 3))
        self.assertAlmostEqual(worst, 5.0)


class Segments(unittest.TestCase):
    def test_per_segment_bins(self):
        def row(t, de, dn, be, bn):
            return {"time_s": t, "drops_7000-7099": de, "drops_7100-7199": dn,
                    "drops_other": 0, "bytes_7000-7099": be, "bytes_7100-7199": bn,
                    "bytes_other": 7}
        rows = [row(0.5, 9, 9, 9, 9),            # before the run: left out
                row(1.5, 1, 0, 100, 10), row(10.9, 2, 3, 0, 10),
                row(11.5, 0, 4, 50, 10), row(31.0, 0, 0, 0, 0)]
        segs = arrivals.per_segment(rows, 1.0, 10.0, 30.0)
        self.assertEqual([s["ess_drops"] for s in segs], [3, 0])
        self.assertEqual([s["enh_drops"] for s in segs], [3, 4])
        self.assertEqual([s["ess_bytes"] for s in segs], [100, 50])


class ShowdownMerge(unittest.TestCase):
    def test_new_runs_replace_their_own(self):
        def run(scenario, system, cmd, shown):
            return {"clip": "mpeg2", "scenario": scenario, "system": system,
                    "run": cmd, "shown": shown}
        old = [run("clean", "twoflow-ctcp", "A", 1), run("clean", "srt-120", "A", 2),
               run("step", "twoflow-ctcp", "B", 3)]
        metas = [{"started": "A"}, {"started": "B"}]
        rows, ms = report.merge(old, metas, [run("step", "twoflow-ctcp", "C", 4),
                                             run("cap2", "twoflow-ctcp", "C", 5)],
                                [{"started": "C"}])
        # replaced in place, the new scenario appended, the peers' row kept
        self.assertEqual([r["shown"] for r in rows], [1, 2, 4, 5])
        # B made no run that is left: its meta goes
        self.assertEqual([m["started"] for m in ms], ["A", "C"])


if __name__ == "__main__":
    unittest.main(argv=[sys.argv[0]], verbosity=2)
