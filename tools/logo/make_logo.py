#!/usr/bin/env python3
"""Draws the distribution's logo (frontend/assets/logo.png) with the standard library only.

A teal disc (the distribution's brand colour) holding a white cross, with a thin gold ring
for the Congo's star, on a transparent background. Deterministic: the same script always
writes the same bytes.

Usage: python3 tools/logo/make_logo.py [--out frontend/assets/logo.png]
"""

import argparse
import math
import struct
import zlib
from pathlib import Path

SIZE = 128
TEAL = (11, 93, 75)
GOLD = (247, 209, 23)
WHITE = (255, 255, 255)


def pixel(x, y):
    cx = cy = (SIZE - 1) / 2
    r = math.hypot(x - cx, y - cy)
    outer = SIZE / 2 - 2
    if r > outer:
        return (0, 0, 0, 0)
    if r > outer - 5:
        return GOLD + (255,)
    arm, half = SIZE * 0.42, SIZE * 0.11
    dx, dy = abs(x - cx), abs(y - cy)
    if (dx <= half and dy <= arm / 2) or (dy <= half and dx <= arm / 2):
        return WHITE + (255,)
    return TEAL + (255,)


def chunk(kind, data):
    body = kind + data
    return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body) & 0xFFFFFFFF)


def png():
    rows = b"".join(
        b"\x00" + b"".join(bytes(pixel(x, y)) for x in range(SIZE)) for y in range(SIZE)
    )
    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
            + chunk(b"IDAT", zlib.compress(rows, 9)) + chunk(b"IEND", b""))


def main():
    root = Path(__file__).resolve().parent.parent.parent
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(root / "frontend" / "assets" / "logo.png"))
    out = Path(parser.parse_args().out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(png())
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
