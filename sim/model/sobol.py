"""Sobol points in pure NumPy (start-up: no import of ``scipy.stats.qmc``).

``sobol_points(d, m)`` gives the first 2**m points of the d-dimensional Sobol sequence
(Sobol 1967) in Gray-code order, built from the direction numbers of Joe & Kuo (2008),
file new-joe-kuo-6.21201 (https://web.maths.unsw.edu.au/~fkuo/sobol/), the set
``scipy.stats.qmc.Sobol`` uses: the points equal ``Sobol(d, scramble=False)
.random_base2(m)`` bit for bit (tests/model/test_sobol.py).

``scrambled_sobol_points(d, m, rng)`` randomises them with a random linear matrix scramble
and a random digital shift (Matousek 1998, "On the L2-discrepancy for anchored boxes",
J. Complexity 14: 527-556, a cheaper stand-in for Owen 1995's nested scramble; the digital
shift as in Dick & Pillichshammer 2010, "Digital Nets and Sequences"): each
coordinate's 32-bit integer x becomes L x XOR e, L a random lower-triangular binary matrix
with a unit diagonal and e a random 32-bit integer, per dimension. Every point is then
uniform on the 2**-32 grid of [0, 1) and the points stay a (t, m, s)-net with the same t
(L maps the leading bits of x bijectively onto the leading bits of L x, and the shift
permutes the elementary intervals). The scheme is scipy's (``scramble=True``), not its
random stream: the same ``rng`` gives other points than scipy's seed does.
"""

from __future__ import annotations

import numpy as np

from sim.errors import SpecsimError

__all__ = ["BITS", "MAX_DIMENSION", "scrambled_sobol_points", "sobol_points"]

#: Bits of each coordinate's integer (points are multiples of 2**-BITS).
BITS = 32

#: Joe & Kuo (2008), new-joe-kuo-6.21201, dimensions 2-256
#: (https://web.maths.unsw.edu.au/~fkuo/sobol/new-joe-kuo-6.21201), in the file's layout:
#: d, s (the degree of the primitive polynomial), a (its inner coefficients as bits, the
#: highest first), then the initial direction integers m_1..m_s. Dimension 1 is all ones.
_JOE_KUO = """\
2 1 0 1
3 2 1 1 3
4 3 1 1 3 1
5 3 2 1 1 1
6 4 1 1 1 3 3
7 4 4 1 3 5 13
8 5 2 1 1 5 5 17
9 5 4 1 1 5 5 5
10 5 7 1 1 7 11 19
11 5 11 1 1 5 1 1
12 5 13 1 1 1 3 11
13 5 14 1 3 5 5 31
14 6 1 1 3 3 9 7 49
15 6 13 1 1 1 15 21 21
16 6 16 1 3 1 13 27 49
17 6 19 1 1 1 15 7 5
18 6 22 1 3 1 15 13 25
19 6 25 1 1 5 5 19 61
20 7 1 1 3 7 11 23 15 103
21 7 4 1 3 7 13 13 15 69
22 7 7 1 1 3 13 7 35 63
23 7 8 1 3 5 9 1 25 53
24 7 14 1 3 1 13 9 35 107
25 7 19 1 3 1 5 27 61 31
26 7 21 1 1 5 11 19 41 61
27 7 28 1 3 5 3 3 13 69
28 7 31 1 1 7 13 1 19 1
29 7 32 1 3 7 5 13 19 59
30 7 37 1 1 3 9 25 29 41
31 7 41 1 3 5 13 23 1 55
32 7 42 1 3 7 3 13 59 17
33 7 50 1 3 1 3 5 53 69
34 7 55 1 1 5 5 23 33 13
35 7 56 1 1 7 7 1 61 123
36 7 59 1 1 7 9 13 61 49
37 7 62 1 3 3 5 3 55 33
38 8 14 1 3 1 15 31 13 49 245
39 8 21 1 3 5 15 31 59 63 97
40 8 22 1 3 1 11 11 11 77 249
41 8 38 1 3 1 11 27 43 71 9
42 8 47 1 1 7 15 21 11 81 45
43 8 49 1 3 7 3 25 31 65 79
44 8 50 1 3 1 1 19 11 3 205
45 8 52 1 1 5 9 19 21 29 157
46 8 56 1 3 7 11 1 33 89 185
47 8 67 1 3 3 3 15 9 79 71
48 8 70 1 3 7 11 15 39 119 27
49 8 84 1 1 3 1 11 31 97 225
50 8 97 1 1 1 3 23 43 57 177
51 8 103 1 3 7 7 17 17 37 71
52 8 115 1 3 1 5 27 63 123 213
53 8 122 1 1 3 5 11 43 53 133
54 9 8 1 3 5 5 29 17 47 173 479
55 9 13 1 3 3 11 3 1 109 9 69
56 9 16 1 1 1 5 17 39 23 5 343
57 9 22 1 3 1 5 25 15 31 103 499
58 9 25 1 1 1 11 11 17 63 105 183
59 9 44 1 1 5 11 9 29 97 231 363
60 9 47 1 1 5 15 19 45 41 7 383
61 9 52 1 3 7 7 31 19 83 137 221
62 9 55 1 1 1 3 23 15 111 223 83
63 9 59 1 1 5 13 31 15 55 25 161
64 9 62 1 1 3 13 25 47 39 87 257
65 9 67 1 1 1 11 21 53 125 249 293
66 9 74 1 1 7 11 11 7 57 79 323
67 9 81 1 1 5 5 17 13 81 3 131
68 9 82 1 1 7 13 23 7 65 251 475
69 9 87 1 3 5 1 9 43 3 149 11
70 9 91 1 1 3 13 31 13 13 255 487
71 9 94 1 3 3 1 5 63 89 91 127
72 9 103 1 1 3 3 1 19 123 127 237
73 9 104 1 1 5 7 23 31 37 243 289
74 9 109 1 1 5 11 17 53 117 183 491
75 9 122 1 1 1 5 1 13 13 209 345
76 9 124 1 1 3 15 1 57 115 7 33
77 9 137 1 3 1 11 7 43 81 207 175
78 9 138 1 3 1 1 15 27 63 255 49
79 9 143 1 3 5 3 27 61 105 171 305
80 9 145 1 1 5 3 1 3 57 249 149
81 9 152 1 1 3 5 5 57 15 13 159
82 9 157 1 1 1 11 7 11 105 141 225
83 9 167 1 3 3 5 27 59 121 101 271
84 9 173 1 3 5 9 11 49 51 59 115
85 9 176 1 1 7 1 23 45 125 71 419
86 9 181 1 1 3 5 23 5 105 109 75
87 9 182 1 1 7 15 7 11 67 121 453
88 9 185 1 3 7 3 9 13 31 27 449
89 9 191 1 3 1 15 19 39 39 89 15
90 9 194 1 1 1 1 1 33 73 145 379
91 9 199 1 3 1 15 15 43 29 13 483
92 9 218 1 1 7 3 19 27 85 131 431
93 9 220 1 3 3 3 5 35 23 195 349
94 9 227 1 3 3 7 9 27 39 59 297
95 9 229 1 1 3 9 11 17 13 241 157
96 9 230 1 3 7 15 25 57 33 189 213
97 9 234 1 1 7 1 9 55 73 83 217
98 9 236 1 3 3 13 19 27 23 113 249
99 9 241 1 3 5 3 23 43 3 253 479
100 9 244 1 1 5 5 11 5 45 117 217
101 9 253 1 3 3 7 29 37 33 123 147
102 10 4 1 3 1 15 5 5 37 227 223 459
103 10 13 1 1 7 5 5 39 63 255 135 487
104 10 19 1 3 1 7 9 7 87 249 217 599
105 10 22 1 1 3 13 9 47 7 225 363 247
106 10 50 1 3 7 13 19 13 9 67 9 737
107 10 55 1 3 5 5 19 59 7 41 319 677
108 10 64 1 1 5 3 31 63 15 43 207 789
109 10 69 1 1 7 9 13 39 3 47 497 169
110 10 98 1 3 1 7 21 17 97 19 415 905
111 10 107 1 3 7 1 3 31 71 111 165 127
112 10 115 1 1 5 11 1 61 83 119 203 847
113 10 121 1 3 3 13 9 61 19 97 47 35
114 10 127 1 1 7 7 15 29 63 95 417 469
115 10 134 1 3 1 9 25 9 71 57 213 385
116 10 140 1 3 5 13 31 47 101 57 39 341
117 10 145 1 1 3 3 31 57 125 173 365 551
118 10 152 1 3 7 1 13 57 67 157 451 707
119 10 158 1 1 1 7 21 13 105 89 429 965
120 10 161 1 1 5 9 17 51 45 119 157 141
121 10 171 1 3 7 7 13 45 91 9 129 741
122 10 181 1 3 7 1 23 57 67 141 151 571
123 10 194 1 1 3 11 17 47 93 107 375 157
124 10 199 1 3 3 5 11 21 43 51 169 915
125 10 203 1 1 5 3 15 55 101 67 455 625
126 10 208 1 3 5 9 1 23 29 47 345 595
127 10 227 1 3 7 7 5 49 29 155 323 589
128 10 242 1 3 3 7 5 41 127 61 261 717
129 10 251 1 3 7 7 17 23 117 67 129 1009
130 10 253 1 1 3 13 11 39 21 207 123 305
131 10 265 1 1 3 9 29 3 95 47 231 73
132 10 266 1 3 1 9 1 29 117 21 441 259
133 10 274 1 3 1 13 21 39 125 211 439 723
134 10 283 1 1 7 3 17 63 115 89 49 773
135 10 289 1 3 7 13 11 33 101 107 63 73
136 10 295 1 1 5 5 13 57 63 135 437 177
137 10 301 1 1 3 7 27 63 93 47 417 483
138 10 316 1 1 3 1 23 29 1 191 49 23
139 10 319 1 1 3 15 25 55 9 101 219 607
140 10 324 1 3 1 7 7 19 51 251 393 307
141 10 346 1 3 3 3 25 55 17 75 337 3
142 10 352 1 1 1 13 25 17 65 45 479 413
143 10 361 1 1 7 7 27 49 99 161 213 727
144 10 367 1 3 5 1 23 5 43 41 251 857
145 10 382 1 3 3 7 11 61 39 87 383 835
146 10 395 1 1 3 15 13 7 29 7 505 923
147 10 398 1 3 7 1 5 31 47 157 445 501
148 10 400 1 1 3 7 1 43 9 147 115 605
149 10 412 1 3 3 13 5 1 119 211 455 1001
150 10 419 1 1 3 5 13 19 3 243 75 843
151 10 422 1 3 7 7 1 19 91 249 357 589
152 10 426 1 1 1 9 1 25 109 197 279 411
153 10 428 1 3 1 15 23 57 59 135 191 75
154 10 433 1 1 5 15 29 21 39 253 383 349
155 10 446 1 3 3 5 19 45 61 151 199 981
156 10 454 1 3 5 13 9 61 107 141 141 1
157 10 457 1 3 1 11 27 25 85 105 309 979
158 10 472 1 3 3 11 19 7 115 223 349 43
159 10 493 1 1 7 9 21 39 123 21 275 927
160 10 505 1 1 7 13 15 41 47 243 303 437
161 10 508 1 1 1 7 7 3 15 99 409 719
162 11 2 1 3 3 15 27 49 113 123 113 67 469
163 11 11 1 3 7 11 3 23 87 169 119 483 199
164 11 21 1 1 5 15 7 17 109 229 179 213 741
165 11 22 1 1 5 13 11 17 25 135 403 557 1433
166 11 35 1 3 1 1 1 61 67 215 189 945 1243
167 11 49 1 1 7 13 17 33 9 221 429 217 1679
168 11 50 1 1 3 11 27 3 15 93 93 865 1049
169 11 56 1 3 7 7 25 41 121 35 373 379 1547
170 11 61 1 3 3 9 11 35 45 205 241 9 59
171 11 70 1 3 1 7 3 51 7 177 53 975 89
172 11 74 1 1 3 5 27 1 113 231 299 759 861
173 11 79 1 3 3 15 25 29 5 255 139 891 2031
174 11 84 1 3 1 1 13 9 109 193 419 95 17
175 11 88 1 1 7 9 3 7 29 41 135 839 867
176 11 103 1 1 7 9 25 49 123 217 113 909 215
177 11 104 1 1 7 3 23 15 43 133 217 327 901
178 11 112 1 1 3 3 13 53 63 123 477 711 1387
179 11 115 1 1 3 15 7 29 75 119 181 957 247
180 11 117 1 1 1 11 27 25 109 151 267 99 1461
181 11 122 1 3 7 15 5 5 53 145 11 725 1501
182 11 134 1 3 7 1 9 43 71 229 157 607 1835
183 11 137 1 3 3 13 25 1 5 27 471 349 127
184 11 146 1 1 1 1 23 37 9 221 269 897 1685
185 11 148 1 1 3 3 31 29 51 19 311 553 1969
186 11 157 1 3 7 5 5 55 17 39 475 671 1529
187 11 158 1 1 7 1 1 35 47 27 437 395 1635
188 11 162 1 1 7 3 13 23 43 135 327 139 389
189 11 164 1 3 7 3 9 25 91 25 429 219 513
190 11 168 1 1 3 5 13 29 119 201 277 157 2043
191 11 173 1 3 5 3 29 57 13 17 167 739 1031
192 11 185 1 3 3 5 29 21 95 27 255 679 1531
193 11 186 1 3 7 15 9 5 21 71 61 961 1201
194 11 191 1 3 5 13 15 57 33 93 459 867 223
195 11 193 1 1 1 15 17 43 127 191 67 177 1073
196 11 199 1 1 1 15 23 7 21 199 75 293 1611
197 11 213 1 3 7 13 15 39 21 149 65 741 319
198 11 214 1 3 7 11 23 13 101 89 277 519 711
199 11 220 1 3 7 15 19 27 85 203 441 97 1895
200 11 227 1 3 1 3 29 25 21 155 11 191 197
201 11 236 1 1 7 5 27 11 81 101 457 675 1687
202 11 242 1 3 1 5 25 5 65 193 41 567 781
203 11 251 1 3 1 5 11 15 113 77 411 695 1111
204 11 256 1 1 3 9 11 53 119 171 55 297 509
205 11 259 1 1 1 1 11 39 113 139 165 347 595
206 11 265 1 3 7 11 9 17 101 13 81 325 1733
207 11 266 1 3 1 1 21 43 115 9 113 907 645
208 11 276 1 1 7 3 9 25 117 197 159 471 475
209 11 292 1 3 1 9 11 21 57 207 485 613 1661
210 11 304 1 1 7 7 27 55 49 223 89 85 1523
211 11 310 1 1 5 3 19 41 45 51 447 299 1355
212 11 316 1 3 1 13 1 33 117 143 313 187 1073
213 11 319 1 1 7 7 5 11 65 97 377 377 1501
214 11 322 1 3 1 1 21 35 95 65 99 23 1239
215 11 328 1 1 5 9 3 37 95 167 115 425 867
216 11 334 1 3 3 13 1 37 27 189 81 679 773
217 11 339 1 1 3 11 1 61 99 233 429 969 49
218 11 341 1 1 1 7 25 63 99 165 245 793 1143
219 11 345 1 1 5 11 11 43 55 65 71 283 273
220 11 346 1 1 5 5 9 3 101 251 355 379 1611
221 11 362 1 1 1 15 21 63 85 99 49 749 1335
222 11 367 1 1 5 13 27 9 121 43 255 715 289
223 11 372 1 3 1 5 27 19 17 223 77 571 1415
224 11 375 1 1 5 3 13 59 125 251 195 551 1737
225 11 376 1 3 3 15 13 27 49 105 389 971 755
226 11 381 1 3 5 15 23 43 35 107 447 763 253
227 11 385 1 3 5 11 21 3 17 39 497 407 611
228 11 388 1 1 7 13 15 31 113 17 23 507 1995
229 11 392 1 1 7 15 3 15 31 153 423 79 503
230 11 409 1 1 7 9 19 25 23 171 505 923 1989
231 11 415 1 1 5 9 21 27 121 223 133 87 697
232 11 416 1 1 5 5 9 19 107 99 319 765 1461
233 11 421 1 1 3 3 19 25 3 101 171 729 187
234 11 428 1 1 3 1 13 23 85 93 291 209 37
235 11 431 1 1 1 15 25 25 77 253 333 947 1073
236 11 434 1 1 3 9 17 29 55 47 255 305 2037
237 11 439 1 3 3 9 29 63 9 103 489 939 1523
238 11 446 1 3 7 15 7 31 89 175 369 339 595
239 11 451 1 3 7 13 25 5 71 207 251 367 665
240 11 453 1 3 3 3 21 25 75 35 31 321 1603
241 11 457 1 1 1 9 11 1 65 5 11 329 535
242 11 458 1 1 5 3 19 13 17 43 379 485 383
243 11 471 1 3 5 13 13 9 85 147 489 787 1133
244 11 475 1 3 1 1 5 51 37 129 195 297 1783
245 11 478 1 1 3 15 19 57 59 181 455 697 2033
246 11 484 1 3 7 1 27 9 65 145 325 189 201
247 11 493 1 3 1 15 31 23 19 5 485 581 539
248 11 494 1 1 7 13 11 15 65 83 185 847 831
249 11 499 1 3 5 7 7 55 73 15 303 511 1905
250 11 502 1 3 5 9 7 21 45 15 397 385 597
251 11 517 1 3 7 3 23 13 73 221 511 883 1265
252 11 518 1 1 3 11 1 51 73 185 33 975 1441
253 11 524 1 3 3 9 19 59 21 39 339 37 143
254 11 527 1 1 7 1 31 33 19 167 117 635 639
255 11 555 1 1 1 3 5 13 59 83 355 349 1967
256 11 560 1 1 1 5 19 3 53 133 97 863 983
"""


def _parse(text: str) -> tuple[tuple[int, int, tuple[int, ...]], ...]:
    rows: list[tuple[int, int, tuple[int, ...]]] = []
    for line in text.splitlines():
        d, s, a, *m = (int(x) for x in line.split())
        assert d == len(rows) + 2 and len(m) == s, line
        rows.append((s, a, tuple(m)))
    return tuple(rows)


_TABLE = _parse(_JOE_KUO)

#: Dimensions the table holds.
MAX_DIMENSION = len(_TABLE) + 1


def _direction_integers(s: int, a: int, m_init: tuple[int, ...]) -> list[int]:
    """m_1..m_BITS by Bratley & Fox's recurrence (Joe & Kuo 2008, eq. 1), for j > s:
    m_j = 2 a_1 m_{j-1} ^ 4 a_2 m_{j-2} ^ ... ^ 2^{s-1} a_{s-1} m_{j-s+1}
          ^ 2^s m_{j-s} ^ m_{j-s}."""
    m = list(m_init)
    for j in range(s, BITS):
        new = m[j - s] ^ (m[j - s] << s)
        for k in range(1, s):
            if (a >> (s - 1 - k)) & 1:
                new ^= m[j - k] << k
        m.append(new)
    return m


def direction_numbers(d: int) -> np.ndarray:
    """Direction numbers v (d, BITS) as BITS-bit integers: v[i, j] = m_{j+1} 2^(BITS-1-j)."""
    if d > MAX_DIMENSION:
        raise SpecsimError(
            f"{d} uncertain inputs: quasi-random draws go up to {MAX_DIMENSION} dimensions "
            "(the Sobol direction numbers sim/model/sobol.py holds)"
        )
    rows = [[1] * BITS] + [_direction_integers(*row) for row in _TABLE[: d - 1]]
    shifts = BITS - 1 - np.arange(BITS, dtype=np.uint64)
    return np.array(rows, dtype=np.uint64) << shifts


def _points(directions: np.ndarray, m: int) -> np.ndarray:
    """The first 2**m points (2**m, d) as integers: point i XORs the directions at the set
    bits of i's Gray code i ^ (i >> 1)."""
    if not 0 <= m <= BITS:
        raise ValueError(f"m = {m}: 2**m points need 0 <= m <= {BITS}")
    index = np.arange(2**m, dtype=np.uint64)
    gray = index ^ (index >> np.uint64(1))
    out = np.zeros((index.size, directions.shape[0]), dtype=np.uint64)
    for j in range(m):
        out[((gray >> np.uint64(j)) & np.uint64(1)).astype(bool)] ^= directions[:, j]
    return out


def _to_unit(points: np.ndarray) -> np.ndarray:
    return points.astype(np.float64) * 2.0**-BITS


def sobol_points(d: int, m: int) -> np.ndarray:
    """The first 2**m Sobol points in d dimensions, shape (2**m, d), in [0, 1)."""
    return _to_unit(_points(direction_numbers(d), m))


def _bits(values: np.ndarray) -> np.ndarray:
    """Bits of BITS-bit integers (..., BITS), the most significant first."""
    shifts = BITS - 1 - np.arange(BITS, dtype=np.uint64)
    return ((values[..., None] >> shifts) & np.uint64(1)).astype(np.uint8)


def _from_bits(bits: np.ndarray) -> np.ndarray:
    shifts = BITS - 1 - np.arange(BITS, dtype=np.uint64)
    return (bits.astype(np.uint64) << shifts).sum(axis=-1, dtype=np.uint64)


def scrambled_sobol_points(d: int, m: int, rng: np.random.Generator) -> np.ndarray:
    """2**m Sobol points in d dimensions, linearly scrambled and digitally shifted (see the
    module docstring), shape (2**m, d), in [0, 1)."""
    directions = direction_numbers(d)
    lower = np.tril(rng.integers(0, 2, size=(d, BITS, BITS), dtype=np.uint8), k=-1)
    lower[:, np.arange(BITS), np.arange(BITS)] = 1  # (d, row, column): bit row of L x
    scrambled = np.einsum("drc,djc->djr", lower, _bits(directions), dtype=np.int64) % 2
    shift = rng.integers(0, 2**BITS, size=d, dtype=np.uint64)
    return _to_unit(_points(_from_bits(scrambled), m) ^ shift)
