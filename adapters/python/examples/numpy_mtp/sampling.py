"""The seeded draft sampler (spec §7; conformance/SPEC.md "Random stream for seeded draft sampling"): Threefry-2x32-20,
MLX's key/bits/uniform, MLX's CPU float32 exp, top-p, top-k, temperature and the inverse-CDF categorical draw."""

import numpy as np

M32 = 0xFFFFFFFF
M64 = 0xFFFFFFFFFFFFFFFF
_ROT = ((13, 15, 26, 6), (17, 29, 16, 24))


def threefry2x32(key, counter):
    k0, k1 = key
    ks = (k0, k1, k0 ^ k1 ^ 0x1BD11BDA)
    x0 = (counter[0] + ks[0]) & M32
    x1 = (counter[1] + ks[1]) & M32
    for i in range(5):
        for r in _ROT[i % 2]:
            x0 = (x0 + x1) & M32
            x1 = ((x1 << r) | (x1 >> (32 - r))) & M32
            x1 ^= x0
        x0 = (x0 + ks[(i + 1) % 3]) & M32
        x1 = (x1 + ks[(i + 2) % 3] + i + 1) & M32
    return x0, x1


def key_of(seed):
    seed &= M64
    return (seed >> 32, seed & M32)


def random_bits(key, n):
    h, o = n // 2, n % 2
    out = [0] * n
    for i in range(h):
        out[i], out[i + h + o] = threefry2x32(key, (i, i + h + o))
    if o:
        out[h] = threefry2x32(key, (h, 0))[0]
    return out


def step_key(seed, step):
    return ((seed & M64) ^ (((step + 1) * 0x9E3779B97F4A7C15) & M64)) & M64


_ONE_BELOW = np.nextafter(np.float32(1.0), np.float32(0.0))


def uniform(key, n):
    b = np.array(random_bits(key, n), dtype=np.uint32).astype(np.float32)   # round to nearest even
    return np.minimum(b / np.float32(4294967296.0), _ONE_BELOW).astype(np.float32)


def gumbel(key, n):
    with np.errstate(divide="ignore"):
        return (-np.log(-np.log(uniform(key, n)))).astype(np.float32)


_EXP_C = [np.float32(c) for c in (1.339887440266574e-3, 9.618437357674640e-3, 5.550332471162809e-2,
                                  2.402264791363012e-1, 6.931472028550421e-1, 1.0)]


def mlx_exp(x):
    """MLX's CPU float32 exp (SPEC.md §5), vectorised; fma emulated in float64 (p·f is exact there)."""
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(invalid="ignore", over="ignore"):
        y = (x * np.float32(1.442695)).astype(np.float32)
        k = np.floor(y.astype(np.float64) + 0.5)
        kk = np.where(np.isfinite(k), k, 0.0)
        f = (y - kk.astype(np.float32)).astype(np.float32)
        p = np.full(x.shape, np.float32(1.535336188319500e-4), dtype=np.float32)
        for c in _EXP_C:
            p = (p.astype(np.float64) * f.astype(np.float64) + np.float64(c)).astype(np.float32)
        e = np.clip(kk + 127, 0, 255).astype(np.uint32) << np.uint32(23)
        out = (e.view(np.float32) * p).astype(np.float32)
    out = np.where(x > 88, np.float32(np.inf), out)
    out = np.where(x < -88, np.float32(0.0), out)
    return np.where(np.isnan(x), np.float32(np.nan), out).astype(np.float32)


def sample_row(lp, temperature, top_k, top_p, seed, step):
    """SPEC.md §6: one row of float32 log-probs -> a token id."""
    lp = np.asarray(lp, dtype=np.float32)
    v = lp.shape[0]
    if temperature == 0:
        return int(np.argmax(lp))                                    # first index on ties
    x = lp.copy()
    if 0 < top_p < 1:
        p = mlx_exp(lp)
        order = np.argsort(lp, kind="stable")                        # ascending, equal values by index
        csum = np.cumsum(p[order], dtype=np.float32)                 # sequential float32 running sum
        keep_sorted = csum > np.float32(1.0 - top_p)
        keep = np.zeros(v, dtype=bool)
        keep[order] = keep_sorted
        x = np.where(keep, x, np.float32(-np.inf)).astype(np.float32)
    if 0 < top_k < v:
        order = np.argsort(-x.astype(np.float64), kind="stable")    # descending, ties keep the lowest indices
        drop = order[top_k:]
        x[drop] = -np.inf
    x = (x * np.float32(1.0 / temperature)).astype(np.float32)
    return inverse_cdf(x, key_of(step_key(seed, step)))


def inverse_cdf(x, key):
    m = x.max()
    if np.isinf(m):
        w = (x == m).astype(np.float32)
    else:
        w = mlx_exp((x - m).astype(np.float32))
    c = np.zeros_like(w)
    if len(w) > 1:
        c[1:] = np.cumsum(w[:-1], dtype=np.float32)
    total = np.float32(c[-1] + w[-1])
    u = np.float32(uniform(key, 1)[0] * total)
    return int(np.searchsorted(c, u, side="right") - 1)
