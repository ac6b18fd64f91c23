"""How different two colours look: CIEDE2000 (Sharma, Wu and Dalal, "The CIEDE2000 color-difference formula:
implementation notes, supplementary test data, and mathematical observations", Color Res. Appl. 30, 2005) between
sRGB colours, through CIELAB under the D65 white point. About 1 is the smallest difference one sees side by side."""

from __future__ import annotations

import math

from matplotlib.colors import to_rgb

#: The D65 reference white in XYZ (sRGB's white point), Y = 1.
_WHITE = (0.95047, 1.0, 1.08883)


def _linear(channel: float) -> float:
    """An sRGB channel without its transfer curve (IEC 61966-2-1)."""
    return channel / 12.92 if channel <= 0.04045 else ((channel + 0.055) / 1.055) ** 2.4


def lab(color) -> tuple[float, float, float]:
    """CIELAB L*, a*, b* of a matplotlib colour (sRGB, D65)."""
    r, g, b = (_linear(c) for c in to_rgb(color))
    xyz = (0.4124564 * r + 0.3575761 * g + 0.1804375 * b,
           0.2126729 * r + 0.7151522 * g + 0.0721750 * b,
           0.0193339 * r + 0.1191920 * g + 0.9503041 * b)

    def f(t: float) -> float:
        return t ** (1 / 3) if t > (6 / 29) ** 3 else t / (3 * (6 / 29) ** 2) + 4 / 29

    fx, fy, fz = (f(v / w) for v, w in zip(xyz, _WHITE))
    return 116 * fy - 16, 500 * (fx - fy), 200 * (fy - fz)


def ciede2000(first: tuple[float, float, float], second: tuple[float, float, float]) -> float:
    """ΔE00 between two CIELAB colours (Sharma et al. 2005, equations 1-22, with k_L = k_C = k_H = 1)."""
    (l1, a1, b1), (l2, a2, b2) = first, second
    c_bar = (math.hypot(a1, b1) + math.hypot(a2, b2)) / 2
    g = 0.5 * (1 - math.sqrt(c_bar ** 7 / (c_bar ** 7 + 25 ** 7)))
    a1p, a2p = a1 * (1 + g), a2 * (1 + g)
    c1p, c2p = math.hypot(a1p, b1), math.hypot(a2p, b2)
    h1p = math.degrees(math.atan2(b1, a1p)) % 360 if c1p else 0.0
    h2p = math.degrees(math.atan2(b2, a2p)) % 360 if c2p else 0.0
    delta_l, delta_c = l2 - l1, c2p - c1p
    if c1p * c2p == 0:
        delta_h_angle = 0.0
    elif abs(h2p - h1p) <= 180:
        delta_h_angle = h2p - h1p
    else:
        delta_h_angle = h2p - h1p - 360 if h2p > h1p else h2p - h1p + 360
    delta_h = 2 * math.sqrt(c1p * c2p) * math.sin(math.radians(delta_h_angle / 2))
    l_bar, c_bar_p = (l1 + l2) / 2, (c1p + c2p) / 2
    if c1p * c2p == 0:
        h_bar = h1p + h2p
    elif abs(h1p - h2p) <= 180:
        h_bar = (h1p + h2p) / 2
    else:
        h_bar = (h1p + h2p + 360) / 2 if h1p + h2p < 360 else (h1p + h2p - 360) / 2
    t = (1 - 0.17 * math.cos(math.radians(h_bar - 30)) + 0.24 * math.cos(math.radians(2 * h_bar))
         + 0.32 * math.cos(math.radians(3 * h_bar + 6)) - 0.20 * math.cos(math.radians(4 * h_bar - 63)))
    delta_theta = 30 * math.exp(-(((h_bar - 275) / 25) ** 2))
    r_c = 2 * math.sqrt(c_bar_p ** 7 / (c_bar_p ** 7 + 25 ** 7))
    s_l = 1 + 0.015 * (l_bar - 50) ** 2 / math.sqrt(20 + (l_bar - 50) ** 2)
    s_c, s_h = 1 + 0.045 * c_bar_p, 1 + 0.015 * c_bar_p * t
    r_t = -math.sin(math.radians(2 * delta_theta)) * r_c
    return math.sqrt((delta_l / s_l) ** 2 + (delta_c / s_c) ** 2 + (delta_h / s_h) ** 2
                     + r_t * (delta_c / s_c) * (delta_h / s_h))


def colour_difference(first, second) -> float:
    """ΔE00 between two matplotlib colours."""
    return ciede2000(lab(first), lab(second))
