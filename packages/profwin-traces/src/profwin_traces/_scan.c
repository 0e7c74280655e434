/* profwin_traces._scan: a one-pass scanner of a Chrome trace's event array, for the columnar reader.
 *
 * Compiled on first use by profwin_traces.native (a C compiler and Python's headers; else the
 * reader decodes with msgspec, as before). Scanner().scan(buf, base) reads bytes of the
 * "traceEvents" array that begin at an event's "{", and returns, for each event it takes,
 *   offset int64, length int32    where its text is, in characters of the decoded file (base: the
 *                                 offset of buf[0]), as the reader yields them
 *   start int64, size int32       the same in bytes of buf
 *   ts, dur float64               nan when absent
 *   kind int32                    an id of the raw bytes of the values of ph, cat, name, pid, tid
 *   corr float64                  args.correlation, nan when absent or null
 * as bytearrays (numpy.frombuffer them), then (stop, stop_chars, status): where the first event it
 * did not take begins, in bytes of buf and in characters, and why it stopped there:
 *   0  buf ends inside that event (or right after it): call again with more bytes from stop;
 *   1  that event is the array's last (a "]" follows it): the reader reads it, and the "]";
 *   2  that event is one to read the standard way: invalid JSON, NaN, nesting deeper than
 *      MAX_DEPTH, or an event the typed decoder would refuse (odd: ts or dur not a finite number,
 *      args not an object, args.correlation neither a number nor null, ph, cat or name not a
 *      string or null, pid or tid not a string, an integer of at most 20 characters or null, one
 *      of these keys twice, a key written with an escape, an event that is not an object).
 * So every event taken decodes as msgspec decodes it with the reader's typed structs, and the
 * reader hands everything else to the standard decoder, which reads it or names the error.
 * key(kind) gives a kind's raw value bytes (None for a missing key); kinds and kind_bytes say how
 * much the table holds, and reset() empties it: the reader bounds it.
 *
 * nest_kids(...) is the one other piece: the columnar filler's sums of children's durations into
 * their parents (self times), the rule of columnar._parents computed a lane at a time.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#define MAX_DEPTH 256
enum { ST_MORE = 0, ST_CLOSED = 1, ST_ERROR = 2 };
enum { WHY_NONE = 0, WHY_INCOMPLETE = 1, WHY_SYNTAX = 2 };

typedef const unsigned char *cp;

typedef struct {
    cp end;
    int why;
    int odd;
    int depth;
    Py_ssize_t extra; /* UTF-8 continuation bytes seen in the current event */
} Ctx;

#define FAIL(c, w) do { (c)->why = (w); return NULL; } while (0)
#define NEED(c, p) do { if ((p) >= (c)->end) FAIL(c, WHY_INCOMPLETE); } while (0)

static inline cp ws(cp p, cp end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) p++;
    return p;
}

static inline int hexval(unsigned char h) {
    return (h >= '0' && h <= '9') || ((h | 0x20) >= 'a' && (h | 0x20) <= 'f');
}

/* A UTF-8 sequence's length at p (a byte >= 0x80), 0 if invalid, -1 if cut by end. */
static int utf8_len(cp p, cp end) {
    unsigned char b = p[0];
    int n;
    if (b >= 0xC2 && b <= 0xDF) n = 2;
    else if (b >= 0xE0 && b <= 0xEF) n = 3;
    else if (b >= 0xF0 && b <= 0xF4) n = 4;
    else return 0;
    for (int i = 1; i < n; i++) {
        if (p + i >= end) return -1;
        if ((p[i] & 0xC0) != 0x80) return 0;
    }
    if (n == 3 && ((b == 0xE0 && p[1] < 0xA0) || (b == 0xED && p[1] >= 0xA0))) return 0; /* overlong, surrogate */
    if (n == 4 && ((b == 0xF0 && p[1] < 0x90) || (b == 0xF4 && p[1] >= 0x90))) return 0; /* overlong, > U+10FFFF */
    return n;
}

/* p just after the opening quote; returns just after the closing quote. */
static cp skip_string(Ctx *c, cp p, int *esc) {
    cp end = c->end;
    for (;;) {
#ifdef __SSE2__
        const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), space = _mm_set1_epi8(0x20);
        while (p + 16 <= end) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            /* signed compare: < 0x20 catches control characters and every byte >= 0x80 */
            __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash)),
                                     _mm_cmplt_epi8(v, space));
            int mask = _mm_movemask_epi8(m);
            if (mask) { p += __builtin_ctz(mask); goto special; }
            p += 16;
        }
#endif
        while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') p++;
        NEED(c, p);
#ifdef __SSE2__
    special:;
#endif
        unsigned char ch = *p;
        if (ch == '"') return p + 1;
        if (ch == '\\') {
            *esc = 1;
            NEED(c, p + 1);
            switch (p[1]) {
            case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
                p += 2;
                break;
            case 'u':
                if (p + 6 > end) FAIL(c, WHY_INCOMPLETE);
                if (!(hexval(p[2]) && hexval(p[3]) && hexval(p[4]) && hexval(p[5]))) FAIL(c, WHY_SYNTAX);
                p += 6;
                break;
            default:
                FAIL(c, WHY_SYNTAX);
            }
            continue;
        }
        if (ch < 0x20) FAIL(c, WHY_SYNTAX);
        int n = utf8_len(p, end);
        if (n < 0) FAIL(c, WHY_INCOMPLETE);
        if (n == 0) FAIL(c, WHY_SYNTAX);
        c->extra += n - 1;
        p += n;
    }
}

static const double POW10[] = {1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11,
                               1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* Where the run of ASCII digits at p ends, 8 bytes at a time where 8 can be read: a word's digits
 * are counted without a branch per digit (the branch that ends a run is the one mispredicted),
 * and, while *m holds fewer than 19 of them, added to it 8 at once (the per-digit loop takes the
 * rest, and the leading zeros of a fraction). Little-endian only: the first digit is the low byte. */
static inline cp digit_run(cp p, cp end, uint64_t *m, int *sig, int *big) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (p + 8 <= end && *m) {
        uint64_t v;
        memcpy(&v, p, 8);
        uint64_t other = ((v - 0x3030303030303030ULL) | (v + 0x4646464646464646ULL)) & 0x8080808080808080ULL;
        int n = other ? __builtin_ctzll(other) >> 3 : 8; /* digits before the first byte that is not one */
        if (n == 0) return p;
        if (*sig + n > 19) break;
        /* The n digits' values in the word's top bytes, zeros below as leading zeros (Lemire's
         * eight-digit sum, as simdjson's parse_eight_digits_unrolled). */
        uint64_t w = (v & 0x0F0F0F0F0F0F0F0FULL) << (8 * (8 - n));
        w = (w * 2561) >> 8;
        w = ((w & 0x00FF00FF00FF00FFULL) * 6553601) >> 16;
        w = ((w & 0x0000FFFF0000FFFFULL) * 42949672960001ULL) >> 32;
        static const uint64_t scale[9] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000};
        *m = *m * scale[n] + w;
        *sig += n;
        p += n;
        if (n < 8) return p;
    }
#endif
    while (p < end && *p >= '0' && *p <= '9') {
        if (*sig < 19) { *m = *m * 10 + (uint64_t)(*p - '0'); (*sig)++; } else { *big = 1; }
        p++;
    }
    return p;
}

/* A JSON number at p (strict grammar). With out, its value (correctly rounded: exact fast path,
 * else CPython's dtoa); *is_int: no fraction and no exponent. */
static cp number(Ctx *c, cp p, double *out, int *is_int) {
    cp start = p, end = c->end;
    uint64_t m = 0;
    int sig = 0, big = 0, integer = 1;
    long exp10 = 0;
    if (*p == '-') { p++; NEED(c, p); }
    if (*p == '0') {
        p++;
    } else if (*p >= '1' && *p <= '9') {
        m = (uint64_t)(*p - '0');
        sig = 1;
        p = digit_run(p + 1, end, &m, &sig, &big);
    } else {
        FAIL(c, WHY_SYNTAX);
    }
    NEED(c, p);
    if (*p == '.') {
        integer = 0;
        p++;
        NEED(c, p);
        if (!(*p >= '0' && *p <= '9')) FAIL(c, WHY_SYNTAX);
        while (m == 0 && p < end && *p == '0') { exp10--; p++; } /* leading zeros: not significant */
        cp first = p;
        p = digit_run(p, end, &m, &sig, &big);
        exp10 -= (long)(p - first); /* each digit moves the point (past 19 of them, big: dtoa reads the text) */
        NEED(c, p);
    }
    if (*p == 'e' || *p == 'E') {
        integer = 0;
        p++;
        NEED(c, p);
        int neg = 0;
        if (*p == '+' || *p == '-') { neg = *p == '-'; p++; NEED(c, p); }
        if (!(*p >= '0' && *p <= '9')) FAIL(c, WHY_SYNTAX);
        long e = 0;
        while (p < end && *p >= '0' && *p <= '9') {
            if (e < 100000) e = e * 10 + (*p - '0'); else big = 1;
            p++;
        }
        NEED(c, p);
        exp10 += neg ? -e : e;
    }
    if (is_int) *is_int = integer;
    if (out) {
        double v;
        if (!big && m <= (1ULL << 53) && exp10 >= -22 && exp10 <= 22) {
            v = (double)m;
            v = exp10 < 0 ? v / POW10[-exp10] : v * POW10[exp10];
            if (*start == '-') v = -v;
        } else {
            char small[64], *s = small;
            size_t n = (size_t)(p - start);
            if (n >= sizeof small && !(s = PyMem_Malloc(n + 1))) FAIL(c, WHY_SYNTAX);
            memcpy(s, start, n);
            s[n] = 0;
            v = PyOS_string_to_double(s, NULL, NULL); /* overflow: +-inf, no exception */
            if (s != small) PyMem_Free(s);
            if (v == -1.0 && PyErr_Occurred()) { PyErr_Clear(); FAIL(c, WHY_SYNTAX); }
        }
        *out = v;
    }
    return p;
}

static cp skip_value(Ctx *c, cp p);

static cp literal(Ctx *c, cp p, const char *word, size_t n) {
    if (p + n > c->end) {
        if (memcmp(p, word, (size_t)(c->end - p)) == 0) FAIL(c, WHY_INCOMPLETE);
        FAIL(c, WHY_SYNTAX);
    }
    if (memcmp(p, word, n) != 0) FAIL(c, WHY_SYNTAX);
    return p + n;
}

/* An object's member name at p (its opening quote) and the ":" after it: returns the value's first
 * byte, with the name's bytes (escapes as written) in key and klen, and esc set if it has one. */
static cp member_key(Ctx *c, cp p, cp *key, size_t *klen, int *esc) {
    cp end = c->end;
    if (*p != '"') FAIL(c, WHY_SYNTAX);
    *key = p + 1;
    if (!(p = skip_string(c, *key, esc))) return NULL;
    *klen = (size_t)(p - 1 - *key);
    p = ws(p, end);
    NEED(c, p);
    if (*p != ':') FAIL(c, WHY_SYNTAX);
    p = ws(p + 1, end);
    NEED(c, p);
    return p;
}

static cp skip_container(Ctx *c, cp p) {
    cp end = c->end;
    unsigned char close = *p == '{' ? '}' : ']';
    if (++c->depth > MAX_DEPTH) FAIL(c, WHY_SYNTAX);
    p = ws(p + 1, end);
    NEED(c, p);
    if (*p == close) { c->depth--; return p + 1; }
    for (;;) {
        if (close == '}') {
            int esc = 0;
            cp key;
            size_t klen;
            if (!(p = member_key(c, p, &key, &klen, &esc))) return NULL;
        }
        if (!(p = skip_value(c, p))) return NULL;
        p = ws(p, end);
        NEED(c, p);
        if (*p == ',') { p = ws(p + 1, end); NEED(c, p); continue; }
        if (*p == close) { c->depth--; return p + 1; }
        FAIL(c, WHY_SYNTAX);
    }
}

/* p at a value's first byte (not whitespace, p < end). */
static cp skip_value(Ctx *c, cp p) {
    int esc = 0;
    switch (*p) {
    case '"': return skip_string(c, p + 1, &esc);
    case '{': case '[': return skip_container(c, p);
    case 't': return literal(c, p, "true", 4);
    case 'f': return literal(c, p, "false", 5);
    case 'n': return literal(c, p, "null", 4);
    case '-': case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9':
        return number(c, p, NULL, NULL);
    default: FAIL(c, WHY_SYNTAX);
    }
}

/* args: p at "{"; reads "correlation". */
static cp scan_args(Ctx *c, cp p, double *corr) {
    cp end = c->end;
    int seen = 0;
    if (++c->depth > MAX_DEPTH) FAIL(c, WHY_SYNTAX);
    p = ws(p + 1, end);
    NEED(c, p);
    if (*p == '}') { c->depth--; return p + 1; }
    for (;;) {
        int esc = 0;
        cp key;
        size_t klen;
        if (!(p = member_key(c, p, &key, &klen, &esc))) return NULL;
        if (esc) c->odd = 1;
        if (!esc && klen == 11 && memcmp(key, "correlation", 11) == 0) {
            if (seen) c->odd = 1;
            seen = 1;
            if (*p == '-' || (*p >= '0' && *p <= '9')) {
                if (!(p = number(c, p, corr, NULL))) return NULL;
                if (!isfinite(*corr)) c->odd = 1;
            } else if (*p == 'n') {
                if (!(p = literal(c, p, "null", 4))) return NULL;
                *corr = NAN;
            } else {
                c->odd = 1;
                if (!(p = skip_value(c, p))) return NULL;
            }
        } else if (!(p = skip_value(c, p))) {
            return NULL;
        }
        p = ws(p, end);
        NEED(c, p);
        if (*p == ',') { p = ws(p + 1, end); NEED(c, p); continue; }
        if (*p == '}') { c->depth--; return p + 1; }
        FAIL(c, WHY_SYNTAX);
    }
}

/* ---- the kind table ----------------------------------------------------------------------- */

#define NSPAN 5
typedef struct { cp p; uint32_t n; } Span;
typedef struct { uint64_t hash; uint64_t at; int32_t id; } Slot; /* at: offset of the key in arena */

typedef struct {
    PyObject_HEAD
    Slot *slots;
    size_t cap, used;
    unsigned char *arena;
    size_t arena_n, arena_cap;
    uint64_t *keys; /* each kind's key: its offset in arena */
    size_t kcap;
} Scanner;

static uint64_t hash_spans(const Span *s, cp limit) {
    /* the lengths packed into one word, then 8-byte words: a multiply chain, one avalanche at
     * the end (collisions only cost a memcmp: the keys are compared in full) */
    const uint64_t K = 0x9E3779B97F4A7C15ULL;
    uint64_t h = (uint64_t)s[0].n ^ ((uint64_t)s[1].n << 12) ^ ((uint64_t)s[2].n << 24) ^ ((uint64_t)s[3].n << 40) ^
                 ((uint64_t)s[4].n << 52);
    h *= K;
    for (int i = 0; i < NSPAN; i++) {
        cp p = s[i].p;
        size_t n = s[i].n;
        while (n >= 8) { uint64_t w; memcpy(&w, p, 8); h = (h ^ w) * K; p += 8; n -= 8; }
        if (n) { /* the tail: one load where 8 bytes are readable, masked to n (little-endian) */
            uint64_t w = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            if (p + 8 <= limit) { memcpy(&w, p, 8); w &= ~0ULL >> (64 - 8 * n); }
            else
#endif
            for (size_t i = 0; i < n; i++) w |= (uint64_t)p[i] << (8 * i);
            h = (h ^ w) * K;
        }
    }
    h ^= h >> 32;
    h *= K;
    return h ^ (h >> 29);
}

static int key_equal(const Scanner *s, uint64_t at, const Span *sp) {
    const unsigned char *k = s->arena + at;
    uint32_t lens[NSPAN];
    memcpy(lens, k, sizeof lens);
    k += sizeof lens;
    for (int i = 0; i < NSPAN; i++) {
        if (lens[i] != sp[i].n || (sp[i].n && memcmp(k, sp[i].p, sp[i].n) != 0)) return 0;
        k += lens[i];
    }
    return 1;
}

static int grow_table(Scanner *s) {
    size_t cap = s->cap ? s->cap * 2 : 1024;
    Slot *slots = PyMem_Malloc(cap * sizeof(Slot));
    if (!slots) return -1;
    for (size_t j = 0; j < cap; j++) slots[j].id = -1;
    for (size_t i = 0; i < s->cap; i++) {
        if (s->slots[i].id < 0) continue;
        size_t j = s->slots[i].hash & (cap - 1);
        while (slots[j].id >= 0) j = (j + 1) & (cap - 1);
        slots[j] = s->slots[i];
    }
    PyMem_Free(s->slots);
    s->slots = slots;
    s->cap = cap;
    return 0;
}

/* The kind id of spans, registering a new one. -1 on error (an exception set). */
static int32_t intern(Scanner *s, const Span *sp, cp limit) {
    uint64_t h = hash_spans(sp, limit);
    size_t j = h & (s->cap - 1);
    for (;;) {
        Slot *slot = &s->slots[j];
        if (slot->id < 0) break;
        if (slot->hash == h && key_equal(s, slot->at, sp)) return slot->id;
        j = (j + 1) & (s->cap - 1);
    }
    /* new */
    size_t need = sizeof(uint32_t) * NSPAN;
    for (int i = 0; i < NSPAN; i++) need += sp[i].n;
    if (s->arena_n + need > s->arena_cap) {
        size_t cap = s->arena_cap ? s->arena_cap : 1 << 16;
        while (cap < s->arena_n + need) cap *= 2;
        unsigned char *a = PyMem_Realloc(s->arena, cap);
        if (!a) { PyErr_NoMemory(); return -1; }
        s->arena = a;
        s->arena_cap = cap;
    }
    uint64_t at = s->arena_n;
    unsigned char *k = s->arena + at;
    for (int i = 0; i < NSPAN; i++) { memcpy(k, &sp[i].n, sizeof(uint32_t)); k += sizeof(uint32_t); }
    for (int i = 0; i < NSPAN; i++) { if (sp[i].n) memcpy(k, sp[i].p, sp[i].n); k += sp[i].n; }
    s->arena_n += need;
    int32_t id = (int32_t)s->used;
    if (s->used >= s->kcap) {
        size_t kcap = s->kcap ? s->kcap * 2 : 1024;
        uint64_t *ka = PyMem_Realloc(s->keys, kcap * sizeof(uint64_t));
        if (!ka) { PyErr_NoMemory(); return -1; }
        s->keys = ka;
        s->kcap = kcap;
    }
    s->keys[s->used] = at;
    s->slots[j].hash = h;
    s->slots[j].at = at;
    s->slots[j].id = id;
    s->used++;
    if (s->used * 2 > s->cap && grow_table(s) < 0) { PyErr_NoMemory(); return -1; }
    return id;
}

/* ---- output columns --------------------------------------------------------------------------- */

typedef struct { PyObject *ba; char *data; size_t n, cap, elem; } Col;

static int col_init(Col *c, size_t elem, size_t cap) {
    c->elem = elem; c->n = 0; c->cap = cap;
    c->ba = PyByteArray_FromStringAndSize(NULL, (Py_ssize_t)(cap * elem));
    if (!c->ba) return -1;
    c->data = PyByteArray_AS_STRING(c->ba);
    return 0;
}

static int col_reserve(Col *c, size_t n) {
    if (n <= c->cap) return 0;
    size_t cap = c->cap * 2;
    if (cap < n) cap = n;
    if (PyByteArray_Resize(c->ba, (Py_ssize_t)(cap * c->elem)) < 0) return -1;
    c->data = PyByteArray_AS_STRING(c->ba);
    c->cap = cap;
    return 0;
}

static int col_finish(Col *c) { return PyByteArray_Resize(c->ba, (Py_ssize_t)(c->n * c->elem)); }

/* ---- the event loop ----------------------------------------------------------------------------- */

enum { K_PH, K_CAT, K_NAME, K_PID, K_TID, K_TS, K_DUR, K_ARGS, K_OTHER };

static inline int key_of(cp k, size_t n) {
    switch (n) {
    case 2:
        if (k[0] == 'p' && k[1] == 'h') return K_PH;
        if (k[0] == 't' && k[1] == 's') return K_TS;
        return K_OTHER;
    case 3:
        if (memcmp(k, "cat", 3) == 0) return K_CAT;
        if (memcmp(k, "pid", 3) == 0) return K_PID;
        if (memcmp(k, "tid", 3) == 0) return K_TID;
        if (memcmp(k, "dur", 3) == 0) return K_DUR;
        return K_OTHER;
    case 4:
        if (memcmp(k, "name", 4) == 0) return K_NAME;
        if (memcmp(k, "args", 4) == 0) return K_ARGS;
        return K_OTHER;
    default:
        return K_OTHER;
    }
}

typedef struct { Span span[NSPAN]; double ts, dur, corr; } Event;

/* One event: p at its "{". */
static cp scan_event(Ctx *c, cp p, Event *ev) {
    cp end = c->end;
    unsigned seen = 0;
    memset(ev->span, 0, sizeof ev->span);
    ev->ts = ev->dur = ev->corr = NAN;
    c->depth = 1;
    p = ws(p + 1, end);
    NEED(c, p);
    if (*p == '}') return p + 1;
    for (;;) {
        int esc = 0;
        cp key;
        size_t klen;
        if (!(p = member_key(c, p, &key, &klen, &esc))) return NULL;
        int k = esc ? K_OTHER : key_of(key, klen);
        if (esc) c->odd = 1; /* it might spell one of the keys read here */
        if (k != K_OTHER) {
            if (seen & (1u << k)) c->odd = 1;
            seen |= 1u << k;
        }
        cp v = p;
        unsigned char ch = *p;
        switch (k) {
        case K_PH: case K_CAT: case K_NAME:
            if (ch == '"') p = skip_string(c, p + 1, &esc);
            else if (ch == 'n') p = literal(c, p, "null", 4);
            else { c->odd = 1; p = skip_value(c, p); }
            if (!p) return NULL;
            ev->span[k].p = v;
            ev->span[k].n = (uint32_t)(p - v);
            break;
        case K_PID: case K_TID:
            if (ch == '"') p = skip_string(c, p + 1, &esc);
            else if (ch == 'n') p = literal(c, p, "null", 4);
            else if (ch == '-' || (ch >= '0' && ch <= '9')) {
                int integer;
                p = number(c, p, NULL, &integer);
                /* a float pid: msgspec's int | str refuses it; a long one may be past Python's
                 * int-string limit, which the standard reader reports */
                if (p && (!integer || p - v > 20)) c->odd = 1;
            } else { c->odd = 1; p = skip_value(c, p); }
            if (!p) return NULL;
            ev->span[k].p = v;
            ev->span[k].n = (uint32_t)(p - v);
            break;
        case K_TS: case K_DUR: {
            double *out = k == K_TS ? &ev->ts : &ev->dur;
            if (ch == '-' || (ch >= '0' && ch <= '9')) {
                if (!(p = number(c, p, out, NULL))) return NULL;
                if (!isfinite(*out)) c->odd = 1;
            } else {
                c->odd = 1;
                if (!(p = skip_value(c, p))) return NULL;
            }
            break;
        }
        case K_ARGS:
            if (ch == '{') p = scan_args(c, p, &ev->corr);
            else { c->odd = 1; p = skip_value(c, p); }
            if (!p) return NULL;
            break;
        default:
            if (!(p = skip_value(c, p))) return NULL;
        }
        p = ws(p, end);
        NEED(c, p);
        if (*p == ',') { p = ws(p + 1, end); NEED(c, p); continue; }
        if (*p == '}') return p + 1;
        FAIL(c, WHY_SYNTAX);
    }
}

static PyObject *Scanner_scan(Scanner *self, PyObject *args) {
    Py_buffer view;
    long long base = 0;
    if (!PyArg_ParseTuple(args, "y*L", &view, &base)) return NULL;
    cp buf = view.buf, end = buf + view.len;
    enum { NCOLS = 8 };
    Col cols[NCOLS]; /* offset, length, start, size, ts, dur, kind, corr */
    static const size_t elems[NCOLS] = {8, 4, 8, 4, 8, 8, 4, 8};
    PyObject *result = NULL;
    int ncols = 0;
    size_t guess = (size_t)view.len / 128 + 16;
    for (; ncols < NCOLS; ncols++) if (col_init(&cols[ncols], elems[ncols], guess) < 0) goto done;

    Ctx c = {end, WHY_NONE, 0, 0, 0};
    Py_ssize_t chars_before = 0; /* UTF-8 continuation bytes of the events taken */
    cp p = buf, stop;
    int status;
    size_t n = 0;
    for (;;) {
        p = ws(p, end);
        stop = p;
        if (p >= end) { status = ST_MORE; break; }
        if (*p != '{') { status = ST_ERROR; break; }
        Event ev;
        c.why = WHY_NONE;
        c.odd = 0;
        c.extra = 0;
        cp q = scan_event(&c, p, &ev);
        if (!q) { status = c.why == WHY_SYNTAX ? ST_ERROR : ST_MORE; break; }
        if (c.odd) { status = ST_ERROR; break; }
        cp after = ws(q, end);
        if (after >= end) { status = ST_MORE; break; } /* "," or "]" next: not known yet */
        if (*after == ']') { status = ST_CLOSED; break; }
        if (*after != ',') { status = ST_ERROR; break; }
        for (int i = 0; i < NCOLS; i++) if (col_reserve(&cols[i], n + 1) < 0) goto done;
        int32_t kind = intern(self, ev.span, end);
        if (kind < 0) goto done;
        ((int64_t *)cols[0].data)[n] = base + (int64_t)(p - buf) - chars_before;
        ((int32_t *)cols[1].data)[n] = (int32_t)((q - p) - c.extra);
        ((int64_t *)cols[2].data)[n] = (int64_t)(p - buf);
        ((int32_t *)cols[3].data)[n] = (int32_t)(q - p);
        ((double *)cols[4].data)[n] = ev.ts;
        ((double *)cols[5].data)[n] = ev.dur;
        ((int32_t *)cols[6].data)[n] = kind;
        ((double *)cols[7].data)[n] = ev.corr;
        n++;
        for (int i = 0; i < NCOLS; i++) cols[i].n = n;
        chars_before += c.extra;
        p = after + 1;
    }
    for (int i = 0; i < NCOLS; i++) if (col_finish(&cols[i]) < 0) goto done;
    {
        Py_ssize_t at = (Py_ssize_t)(stop - buf);
        result = Py_BuildValue("(OOOOOOOOnni)", cols[0].ba, cols[1].ba, cols[2].ba, cols[3].ba, cols[4].ba, cols[5].ba,
                               cols[6].ba, cols[7].ba, at, at - chars_before, status);
    }
done:
    for (int i = 0; i < ncols; i++) Py_DECREF(cols[i].ba);
    PyBuffer_Release(&view);
    return result;
}

/* A value of a kind's key as Python's json reads it where that is plain: a string without an
   escape is its UTF-8 text, an integer of at most 18 digits (within int64) its int; any other value
   (or a string that is not UTF-8) stays raw bytes, for Python to decode. */
static PyObject *key_value(const unsigned char *k, uint32_t n, int intern) {
    if (n >= 2 && k[0] == '"' && !memchr(k + 1, '\\', n - 2)) {
        PyObject *s = PyUnicode_DecodeUTF8((const char *)k + 1, n - 2, NULL);
        if (s) {
            if (intern) PyUnicode_InternInPlace(&s);
            return s;
        }
        PyErr_Clear();
    } else {
        uint32_t i = k[0] == '-';
        if (n > i && n - i <= 18) {  /* the scanner has checked the number's JSON */
            long long v = 0;
            for (; i < n && k[i] >= '0' && k[i] <= '9'; i++) v = v * 10 + (k[i] - '0');
            if (i == n) return PyLong_FromLongLong(k[0] == '-' ? -v : v);
        }
    }
    return PyBytes_FromStringAndSize((const char *)k, n);
}

static PyObject *Scanner_keys(Scanner *self, PyObject *ids) {
    PyObject *seq = PySequence_Fast(ids, "keys() takes a sequence of kind ids");
    if (!seq) return NULL;
    Py_ssize_t m = PySequence_Fast_GET_SIZE(seq);
    PyObject *keys = PyList_New(m), *odd = PyList_New(0), *result = NULL;
    if (!keys || !odd) goto done;
    for (Py_ssize_t j = 0; j < m; j++) {
        Py_ssize_t id = PyLong_AsSsize_t(PySequence_Fast_GET_ITEM(seq, j));
        if (id == -1 && PyErr_Occurred()) goto done;
        if (id < 0 || (size_t)id >= self->used) { PyErr_SetString(PyExc_IndexError, "no such kind"); goto done; }
        const unsigned char *k = self->arena + self->keys[id];
        uint32_t lens[NSPAN];
        memcpy(lens, k, sizeof lens);
        k += sizeof lens;
        PyObject *t = PyTuple_New(NSPAN);
        if (!t) goto done;
        PyList_SET_ITEM(keys, j, t);
        int raw = 0;
        for (int i = 0; i < NSPAN; i++) {
            PyObject *v;
            if (lens[i]) v = key_value(k, lens[i], i < 2);  /* ph and cat repeat across kinds: one str each */
            else { v = Py_None; Py_INCREF(v); }
            if (!v) goto done;
            raw |= PyBytes_CheckExact(v);
            PyTuple_SET_ITEM(t, i, v);
            k += lens[i];
        }
        if (raw) {
            PyObject *at = PyLong_FromSsize_t(j);
            if (!at || PyList_Append(odd, at) < 0) { Py_XDECREF(at); goto done; }
            Py_DECREF(at);
        }
    }
    result = PyTuple_Pack(2, keys, odd);
done:
    Py_DECREF(seq);
    Py_XDECREF(keys);
    Py_XDECREF(odd);
    return result;
}

static PyObject *Scanner_reset(Scanner *self, PyObject *unused) {
    for (size_t i = 0; i < self->cap; i++) { self->slots[i].id = -1; self->slots[i].hash = 0; self->slots[i].at = 0; }
    self->used = 0;
    self->arena_n = 0;
    Py_RETURN_NONE;
}

static PyObject *Scanner_kinds(Scanner *self, void *closure) { return PyLong_FromSize_t(self->used); }

static PyObject *Scanner_kind_bytes(Scanner *self, void *closure) { return PyLong_FromSize_t(self->arena_n); }

static int Scanner_init(Scanner *self, PyObject *args, PyObject *kw) {
    if (!PyArg_ParseTuple(args, "")) return -1;
    if (!self->slots) {
        if (grow_table(self) < 0) { PyErr_NoMemory(); return -1; }
    }
    return 0;
}

static void Scanner_dealloc(Scanner *self) {
    PyMem_Free(self->slots);
    PyMem_Free(self->arena);
    PyMem_Free(self->keys);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_VARARGS,
     "scan(buf, base) -> (offset, length, start, size, ts, dur, kind, corr, stop, stop_chars, status)"},
    {"keys", (PyCFunction)Scanner_keys, METH_O,
     "keys(kinds) -> (each kind's ph, cat, name, pid, tid: a plain string as str, a plain integer as int, any other"
     " value as its raw bytes, None: absent; the positions of the keys that hold raw bytes)"},
    {"reset", (PyCFunction)Scanner_reset, METH_NOARGS, "Forget the kinds."},
    {NULL}};

static PyGetSetDef Scanner_getset[] = {
    {"kinds", (getter)Scanner_kinds, NULL, "kinds known", NULL},
    {"kind_bytes", (getter)Scanner_kind_bytes, NULL, "bytes the kinds' keys hold", NULL},
    {NULL}};

static PyTypeObject ScannerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "profwin_traces._scan.Scanner",
    .tp_basicsize = sizeof(Scanner),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Scanner_init,
    .tp_dealloc = (destructor)Scanner_dealloc,
    .tp_methods = Scanner_methods,
    .tp_getset = Scanner_getset,
};

/* ---- self times: children's durations summed into their parents -------------------------------- */

/* nest_kids(lane, ts, end, dur, fresh) for complete events in nesting order (by lane, start, longest
 * first; int64, float64 x3, bool): for each, the durations of its fresh direct children, summed in
 * order, as float64 bytes. columnar._parents' rule, a lane at a time: an event's depth is the events
 * before it on its lane less those ended by its start (a min-heap of their ends), its parent the
 * last earlier event one level up on the lane, which must not end before it. */
static PyObject *nest_kids(PyObject *module, PyObject *args) {
    Py_buffer b[5];
    static const Py_ssize_t sizes[5] = {8, 8, 8, 8, 1};
    int got = 0;
    PyObject *result = NULL;
    double *heap = NULL;
    Py_ssize_t *last = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*y*y*", &b[0], &b[1], &b[2], &b[3], &b[4])) return NULL;
    got = 5;
    Py_ssize_t n = b[4].len;
    for (int i = 0; i < 5; i++)
        if (b[i].len != n * sizes[i]) { PyErr_SetString(PyExc_ValueError, "columns of unequal lengths"); goto done; }
    const int64_t *lane = b[0].buf;
    const double *ts = b[1].buf, *end = b[2].buf, *dur = b[3].buf;
    const unsigned char *fresh = b[4].buf;
    result = PyByteArray_FromStringAndSize(NULL, n * (Py_ssize_t)sizeof(double));
    heap = PyMem_Malloc((n ? n : 1) * sizeof(double));
    last = PyMem_Malloc((n ? n : 1) * sizeof(Py_ssize_t));
    if (!result || !heap || !last) { if (result) { Py_CLEAR(result); } PyErr_NoMemory(); goto done; }
    double *kids = (double *)PyByteArray_AS_STRING(result);
    for (Py_ssize_t i = 0; i < n; i++) last[i] = -1;
    Py_ssize_t lo = 0, size = 0; /* the lane's first position; the ends of its open events, a heap */
    for (Py_ssize_t i = 0; i < n; i++) {
        kids[i] = 0.0;
        if (i == 0 || lane[i] != lane[i - 1]) { lo = i; size = 0; }
        while (size && heap[0] <= ts[i]) { /* pop the smallest end: that event ended by this start */
            double x = heap[--size];
            Py_ssize_t k = 0;
            for (;;) {
                Py_ssize_t c = 2 * k + 1;
                if (c >= size) break;
                if (c + 1 < size && heap[c + 1] < heap[c]) c++;
                if (heap[c] >= x) break;
                heap[k] = heap[c];
                k = c;
            }
            heap[k] = x;
        }
        Py_ssize_t depth = size; /* the events before it on its lane less those ended */
        if (depth > 0) {
            Py_ssize_t parent = last[depth - 1];
            if (parent >= lo && end[parent] >= end[i] && fresh[i]) kids[parent] += dur[i];
        }
        last[depth] = i;
        Py_ssize_t k = size++; /* push this event's end */
        while (k && heap[(k - 1) / 2] > end[i]) { heap[k] = heap[(k - 1) / 2]; k = (k - 1) / 2; }
        heap[k] = end[i];
    }
done:
    for (int i = 0; i < got; i++) PyBuffer_Release(&b[i]);
    PyMem_Free(heap);
    PyMem_Free(last);
    return result;
}

static PyMethodDef module_methods[] = {
    {"nest_kids", nest_kids, METH_VARARGS, "nest_kids(lane, ts, end, dur, fresh) -> float64 bytes (see _scan.c)"},
    {NULL}};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "profwin_traces._scan", "A trace event array scanner.", -1, module_methods};

PyMODINIT_FUNC PyInit__scan(void) {
    if (PyType_Ready(&ScannerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&ScannerType);
    if (PyModule_AddObject(m, "Scanner", (PyObject *)&ScannerType) < 0) { Py_DECREF(&ScannerType); Py_DECREF(m); return NULL; }
    return m;
}
