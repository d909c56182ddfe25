#!/usr/bin/python3
"""Coefficients of graft's float32 exact gelu (Note [Fast float32 gelu] in src/kernels/vec_f32.h).

Two fits, both minimax in relative error (Lawson's iteratively reweighted least squares; the
rational one linearised as in Sanathanan-Koerner), reference values from mpmath at 30 digits:

  1. 1/f(a) = K a + S(a) / Q(a) on a in [0, 13.25], f(a) = erfc(a / sqrt 2) e^(a^2/2) / 2,
     K = sqrt(2 pi), S of degree 3, Q monic of degree 4, S(0) = 2 Q(0) exactly (so that
     f(0) = 1/2 exactly in float). Past 13.25 gelu(-a) is denormal and needs no relative accuracy.
  2. e^(-rho/2) = P(rho) / P(-rho), P(rho) = 1 - rho/4 + c2 rho^2 + c3 rho^3, on |rho| <= 0.81
     (the reduced argument's range, see the Note).

Prints the coefficients rounded to float (9 significant digits round-trip) and the fit errors
(exact arithmetic, float coefficients). Run: /usr/bin/python3 tools/fit_gelu.py (needs numpy, mpmath).
"""
import struct

import mpmath as mp
import numpy as np

mp.mp.dps = 30


def f32(v):
    return struct.unpack("f", struct.pack("f", v))[0]


def lawson(build, target, iters=500):
    """build(weights) -> (coeffs, err vector); returns the coefficients with the smallest max error."""
    w = np.ones(len(target)) / len(target)
    best = (np.inf, None)
    state = {"Qprev": np.ones(len(target))}
    for _ in range(iters):
        c, e = build(np.sqrt(w), state)
        if e.max() < best[0]:
            best = (e.max(), c.copy())
        w = w * e
        w /= w.sum()
    return best


def fit_erfcx():
    A = np.linspace(0.0, 13.25, 4000)
    F = np.array([float(2 / (mp.erfc(a / mp.sqrt(2)) * mp.exp(a * a / 2))) for a in A])  # 1/f
    K = float(mp.sqrt(2 * mp.pi))
    G = F - K * A

    # G = S / Q, Q = a^4 + q3 a^3 + q2 a^2 + q1 a + q0, S = 2 q0 + s1 a + s2 a^2 + s3 a^3.
    # Linearised: S - G Q = G a^4, unknowns (q0, q1, q2, q3, s1, s2, s3).
    def cols(G):
        return np.stack([2 - G, -G * A, -G * A**2, -G * A**3, A, A**2, A**3], 1)

    def evaluate(c):
        q0, q1, q2, q3, s1, s2, s3 = c
        Q = A**4 + q3 * A**3 + q2 * A**2 + q1 * A + q0
        S = 2 * q0 + s1 * A + s2 * A**2 + s3 * A**3
        return np.abs((K * A + S / Q) / F - 1)

    def build(sw, st):
        s = sw / (F * st["Qprev"])
        c, *_ = np.linalg.lstsq(cols(G) * s[:, None], G * A**4 * s, rcond=None)
        q0, q1, q2, q3 = c[:4]
        st["Qprev"] = A**4 + q3 * A**3 + q2 * A**2 + q1 * A + q0
        return c, evaluate(c)

    err, c = lawson(build, F)
    cf = np.array([f32(v) for v in c])
    return err, evaluate(cf).max(), cf


def fit_exp():
    R = np.linspace(-0.81, 0.81, 4001)
    E = np.exp(-R / 2)  # double is enough here: the target error is ~1e-10

    def evaluate(c):
        c1, c2, c3 = c
        P = 1 + c1 * R + c2 * R**2 + c3 * R**3
        Pm = 1 - c1 * R + c2 * R**2 - c3 * R**3
        return np.abs(P / Pm / E - 1)

    def build(sw, st):
        # P(r) - E P(-r) = 0 with c1 = -1/4 fixed: unknowns c2, c3.
        c1 = -0.25
        Acols = np.stack([R**2 - E * R**2, R**3 + E * R**3], 1)
        rhs = -(1 - E) - c1 * (R + E * R)
        s = sw / (E * st["Qprev"])
        c, *_ = np.linalg.lstsq(Acols * s[:, None], rhs * s, rcond=None)
        full = np.array([c1, c[0], c[1]])
        st["Qprev"] = 1 - c1 * R + c[0] * R**2 - c[1] * R**3
        return full, evaluate(full)

    err, c = lawson(build, E)
    cf = np.array([f32(v) for v in c])
    return err, evaluate(cf).max(), cf


if __name__ == "__main__":
    err, errf, c = fit_erfcx()
    q0, q1, q2, q3, s1, s2, s3 = c
    print("1/f = K a + S/Q: max relative error %.3g (float coefficients %.3g)" % (err, errf))
    print("  S: %.9g (= 2 q0), %.9g, %.9g, %.9g" % (2 * q0, s1, s2, s3))
    print("  Q: %.9g, %.9g, %.9g, %.9g, 1" % (q0, q1, q2, q3))
    err, errf, c = fit_exp()
    print("e^(-rho/2) = P(rho)/P(-rho): max relative error %.3g (float coefficients %.3g)" % (err, errf))
    print("  P: 1, %.9g, %.9g, %.9g" % tuple(c))
