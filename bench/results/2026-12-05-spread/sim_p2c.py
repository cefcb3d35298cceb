"""Simulation of ferry's p2c-ewma (proxy/src/cluster/{balance,endpoint}.rs) on two replicas,
to test the explanation in NOTES.md. Not part of the bench; `python3 sim_p2c.py`, ~20 s.

Requests due every 1/rate s; each replica answers in its service time +0-20 % jitter, and with
probability 2 % a "hiccup" (the replica's process preempted on the shared core 0) adds 1-4 ms,
to one answer (burst 1) or to the next 5 answers of that replica (burst 5). Variants:
  peak     ferry as built: a slower answer replaces the estimate at once, faster ones blend
           in with weight 1 - exp(-gap / 2 s); idle decay toward zero, 2 s; 25 % tie
  tie50    the same with a 50 % tie
  ewma0.2  no peak: every answer blends in with weight 0.2; idle decay as above; 25 % tie
"""
import heapq, math, random

TAU = 2.0


def run(rate, n, svc, seed, variant, burst, hiccup_p=0.02):
    rnd = random.Random(seed)
    tie = 0.5 if variant == "tie50" else 0.25
    est, upd, infl, served, lat, hic = [1e-3] * 2, [0.0] * 2, [0] * 2, [0] * 2, [], [0] * 2
    done = []

    def w(i, now):
        return math.exp(-(now - upd[i]) / TAU)

    def observe(i, rtt, now):
        ww = w(i, now)
        if variant == "ewma0.2":
            est[i] = est[i] * ww * 0.8 + rtt * 0.2
        elif rtt > est[i] * ww:
            est[i] = rtt
        else:
            est[i] = est[i] * ww + rtt * (1 - ww)
        upd[i] = now

    for k in range(n):
        now = k / rate
        while done and done[0][0] <= now:
            t, i, s = heapq.heappop(done)
            infl[i] -= 1
            observe(i, t - s, t)
        a, b = (0, 1) if rnd.random() < 0.5 else (1, 0)
        ca, cb = (est[x] * w(x, now) * (infl[x] + 1) for x in (a, b))
        if ca > cb:
            a, b, ca, cb = b, a, cb, ca
        pick = a if (cb - ca) > tie * cb else (a if rnd.random() < 0.5 else b)
        s = svc[pick] * (1 + 0.2 * rnd.random())
        if rnd.random() < hiccup_p / burst:
            hic[pick] = burst
        if hic[pick] > 0:
            s += rnd.uniform(1e-3, 4e-3)
            hic[pick] -= 1
        infl[pick] += 1
        served[pick] += 1
        lat.append(s)
        heapq.heappush(done, (now + s, pick, now))
    lat.sort()
    return served[1] / n, lat[int(0.99 * len(lat))] * 1e3


FAST, SLOW, SEEDS = 2.3e-3, 10.5e-3, 40
for burst in (1, 5):
    for variant in ("peak", "tie50", "ewma0.2"):
        out = []
        for name, rate, n in (("identical_20", 20, 400), ("identical_200", 200, 2000)):
            shares = [run(rate, n, (FAST, FAST), s, variant, burst)[0] for s in range(SEEDS)]
            bad = sum(1 for x in shares if not 0.4 <= x <= 0.6)
            out.append(f"{name} outside 40-60 %: {bad:2d}/{SEEDS}")
        fast = sorted(run(200, 2000, (FAST, FAST), s, variant, burst)[1] for s in range(SEEDS))
        slow = [run(200, 2000, (FAST, SLOW), s, variant, burst) for s in range(SEEDS)]
        share = sum(x[0] for x in slow) / SEEDS
        ratio = sorted(x[1] for x in slow)[SEEDS // 2] / fast[SEEDS // 2]
        out.append(f"slow_200 B {share * 100:.1f} %, p99 ratio (medians) {ratio:.2f}x")
        print(f"burst {burst} {variant:8s} " + "; ".join(out))
