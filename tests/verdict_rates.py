#!/usr/bin/env python3
"""verdict_rates.py SIM [SYSTEM...] [--seeds N]: how often ./sim's steady-state verdict says
"not steady", and how often its 95% interval holds the exact mean response time, on systems
with exact answers computed here (Erlang C, Pollaczek-Khinchine, exact MVA), over seeds
1000, 1001, ... Prints one line per system and model."""
import json, math, subprocess, sys

def erlang_c_w(c, lam, s):
    a = lam * s; rho = a / c
    term = sum(a**k / math.factorial(k) for k in range(c))
    last = a**c / math.factorial(c) / (1 - rho)
    return s + last / (term + last) / (c / s - lam)

def pk_w(lam, s, es2):
    return s + lam * es2 / (2 * (1 - lam * s))

def mva(n, s, z):  # one exponential queue and a delay station
    q = 0.0
    for k in range(1, n + 1):
        r = s * (1 + q); x = k / (r + z); q = x * r
    return r

def lognormal_moment(p50, p99, k):
    sigma = math.log(p99 / p50) / 2.3263478740408408
    return p50 ** k * math.exp(k * k * sigma * sigma / 2)

LGN_MEAN, LGN_ES2 = lognormal_moment(0.2e-3, 67e-3, 1), lognormal_moment(0.2e-3, 67e-3, 2)
MMC = ["scenarios/mmc.scn"]
SYSTEMS = {
    # name: (args, exact mean response time in ms or None, expected verdict)
    "mmc85": (MMC + ["--set", "cores=5", "--set", "rate=1062.5", "--set", "program=cpu(exp(4ms))",
                     "--set", "duration=60s", "--set", "warmup=5s"], erlang_c_w(5, 1062.5, 0.004) * 1e3, "steady"),
    "mg1": (MMC + ["--set", "cores=1", "--set", "rate=700", "--set", "program=cpu(uniform(0.5ms,1.5ms))",
                   "--set", "duration=60s", "--set", "warmup=5s"],
            pk_w(700, 1e-3, 1e-6 + (1e-3) ** 2 / 12) * 1e3, "steady"),
    "closed": (MMC + ["--set", "rate=0", "--set", "cores=1", "--set", "users=20", "--set", "think=exp(20ms)",
                      "--set", "program=cpu(exp(2ms))", "--set", "duration=60s", "--set", "warmup=5s"],
               mva(20, 2.0, 20.0), "steady"),
    "mm1_99": (MMC + ["--set", "cores=1", "--set", "rate=990", "--set", "program=cpu(exp(1ms))",
                      "--set", "duration=10s", "--set", "warmup=1s"], 1 / (1000 - 990) * 1e3, "near"),
    "mm1_999": (MMC + ["--set", "cores=1", "--set", "rate=999", "--set", "program=cpu(exp(1ms))",
                       "--set", "duration=10s", "--set", "warmup=1s"], 1 / (1000 - 999) * 1e3, "near"),
    "mm1_99f": (MMC + ["--set", "cores=1", "--set", "rate=99000", "--set", "program=cpu(exp(10us))",
                       "--set", "duration=10s", "--set", "warmup=1s"], 1 / (100000 - 99000) * 1e3, "near"),
    "heavy": (MMC + ["--set", "rate=20", "--set", "program=call(A)", "--set",
                     "service.A.latency=lognormal(2s,20s)", "--set", "duration=20s", "--set",
                     "warmup=4s"], None, "not"),
    "over100": (MMC + ["--set", "cores=1", "--set", "rate=1000", "--set", "program=cpu(exp(1ms))",
                       "--set", "duration=20s", "--set", "warmup=2s"], None, "not"),
    "over105": (MMC + ["--set", "cores=1", "--set", "rate=1050", "--set", "program=cpu(exp(1ms))",
                       "--set", "duration=20s", "--set", "warmup=2s"], None, "not"),
    "ramp": (MMC + ["--set", "rate=0", "--set", "cores=1", "--set", "users=40", "--set", "think=exp(40ms)", "--set",
                    "rampup=30s", "--set", "program=cpu(exp(1ms))", "--set", "duration=40s",
                    "--set", "warmup=5s"], None, "not"),
    # lognormal service of cs^2 4.25 (p99/p50 20), mean 1 ms: from empty at rho 0.97 in a
    # window under one relaxation time (4.4 s x 2.6), and at rho 0.7 over 56 of them
    "skewed": (MMC + ["--set", "cores=1", "--set", "rate=970", "--set",
                      "program=cpu(lognormal(0.43644ms,8.7287ms))", "--set", "duration=9s",
                      "--set", "warmup=1s"], None, "not"),
    "skewed70": (MMC + ["--set", "cores=1", "--set", "rate=700", "--set",
                        "program=cpu(lognormal(0.43644ms,8.7287ms))", "--set", "duration=60s",
                        "--set", "warmup=5s"], pk_w(700, 1e-3, 5.25e-6) * 1e3, "steady"),
    # lognormal p50 0.2 ms, p99 67 ms (p99/p50 335, mean 4.54 ms) at rho 0.5, 9 s windows
    "heavy_cpu": (MMC + ["--set", "cores=1", "--set", "rate=110", "--set",
                         "program=cpu(lognormal(0.2ms,67ms))", "--set", "duration=10s", "--set",
                         "warmup=1s"], pk_w(110, LGN_MEAN, LGN_ES2) * 1e3, "not"),
    # rho 0.99 on 50 relaxation times after 5 (default: one run in 10 batches)
    "mm2_99": (MMC + ["--set", "cores=2", "--set", "rate=99000", "--set",
                      "program=cpu(exp(20us))", "--set", "duration=22s", "--set", "warmup=2s"],
               erlang_c_w(2, 99000, 20e-6) * 1e3, "near"),
    "md1_99": (MMC + ["--set", "cores=1", "--set", "rate=99000", "--set", "program=cpu(10us)",
                      "--set", "duration=22s", "--set", "warmup=2s"],
               pk_w(99000, 10e-6, 1e-10) * 1e3, "near"),
    "mg1_99": (MMC + ["--set", "cores=1", "--set", "rate=49500", "--set",
                      "program=cpu(lognormal(8.7287us,174.567us))", "--set", "duration=115s",
                      "--set", "warmup=10s"], pk_w(49500, 20e-6, 5.25 * 20e-6 ** 2) * 1e3, "near"),
    "fill": (MMC + ["--set", "cores=1", "--set", "rate=960", "--set", "program=cpu(exp(1ms))",
                    "--set", "duration=8s", "--set", "warmup=0"], None, "not"),
}

def main():
    args = sys.argv[1:]
    sim = args.pop(0)
    nseeds = 200
    if "--seeds" in args:
        i = args.index("--seeds"); nseeds = int(args[i + 1]); del args[i:i + 2]
    extra = []
    if "--" in args:
        i = args.index("--"); extra = args[i + 1:]; del args[i:]
    for name in args or list(SYSTEMS):
        cmd, exact, kind = SYSTEMS[name]
        notst = {"platform": 0, "virtual": 0}; cover = {"platform": [0, 0], "virtual": [0, 0]}
        reasons = {}
        for seed in range(1000, 1000 + nseeds):
            out = subprocess.run([sim, "--headless", "--json", "--seed", str(seed)] + cmd + extra,
                                 capture_output=True, text=True, check=True).stdout
            j = json.loads(out)
            for mk in ("platform", "virtual"):
                r = j[mk]
                if not r["steady"]:
                    notst[mk] += 1
                    why = r["steady_why"].split(":")[1].split(" ")[1:4]
                    reasons[" ".join(why)] = reasons.get(" ".join(why), 0) + 1
                elif exact is not None:
                    m, h = r["latency_ms"]["mean"], r["latency_ms"]["mean_ci95"]
                    cover[mk][1] += 1
                    cover[mk][0] += h is not None and abs(m - exact) <= h
        for mk in ("platform", "virtual"):
            line = f"{name:8s} {mk:8s} not steady {notst[mk]}/{nseeds} = {100*notst[mk]/nseeds:.1f}%"
            if exact is not None:
                c, n = cover[mk]
                line += f"; among steady, interval holds {exact:.4g} ms: {c}/{n}"
            print(line, flush=True)
        print(f"{name:8s} reasons: {reasons}", flush=True)

main()
