#!/usr/bin/env python3
"""Writes the hand variants of the one-kernel attention's generated OpenCL C (issue 34):
   python3 bench/attention/online/variants.py generated.cl OUTDIR
vec.cl (k's and v's panels read as float4), partial.cl (the score's sum in four partial
sums) and partial_vec.cl (both), for hand_job.sh to time beside the generated kernel."""
import re
import sys

src = open(sys.argv[1]).read()
out = sys.argv[2]
score = re.search(r"        y_score = 0.0f;\n        #pragma unroll\n        for \(int d1 = 0; d1 < 64; \+\+d1\) \{\n"
                  r".*?\n.*?\n        \}\n", src, re.S).group(0)
acc = re.search(r"        #pragma unroll\n        for \(int d = 0; d < 64; \+\+d\) \{\n.*?\n.*?\n        \}\n",
                src, re.S).group(0)
row = "(((jo % 4 * 1 + 0) * 1 + 0) * 8 + ji) * 64"  # the panels' row of step ji


def score_sum(partial, vec):
    ks = ["kv.x", "kv.y", "kv.z", "kv.w"] if vec else [f"k_s[{row} + d1 + {i}]" for i in range(4)]
    s = ("        {\n        float p0 = 0.0f, p1 = 0.0f, p2 = 0.0f, p3 = 0.0f;\n        #pragma unroll\n"
         "        for (int d1 = 0; d1 < 64; d1 += 4) {\n")
    if vec:
        s += f"          const float4 kv = *(const __local float4 *)&k_s[{row} + d1];\n"
    for i in range(4):
        s += f"          p{i if partial else 0} = p{i if partial else 0} + q_r[d1 + {i}] * {ks[i]};\n"
    return s + "        }\n        y_score = " + ("(p0 + p1) + (p2 + p3)" if partial else "p0") + ";\n        }\n"


acc_vec = (f"        #pragma unroll\n        for (int d = 0; d < 64; d += 4) {{\n"
           f"          const float4 vv = *(const __local float4 *)&v_s[{row} + d];\n" +
           "".join(f"          y_acc[d + {i}] = y_acc[d + {i}] + y_weight * vv.{c};\n" for i, c in enumerate("xyzw")) +
           "        }\n")
for name, partial, vec in (("vec", False, True), ("partial", True, False), ("partial_vec", True, True)):
    text = src.replace(score, score_sum(partial, vec))
    if vec:
        text = text.replace(acc, acc_vec)
    open(f"{out}/{name}.cl", "w").write(text)
