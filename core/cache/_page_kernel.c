/* The per-page loops of radix_evict.cache.ownership.PageOwners on a cpu pool.
 *
 * ownership.py states the rules (who holds a page, when a page is free) and
 * keeps a numpy version of every check: on other devices, in the interpreted
 * build, and to name the culprits once a check here has failed. Each numpy
 * call is a pass of its own over the pages (a bounds check, a gather, a
 * compare, a scatter), and on the request path those passes cost more than
 * the rest of an insert; these loops do the same checks in one pass.
 *
 * Arrays come through the buffer protocol, one-dimensional, any stride:
 * tag and mark int32, stack, pages and slots int64. Nothing here allocates a
 * Python object: where a loop writes a new array (pages_of, page_slots), the
 * caller passes it (free_slots keeps the pages of a long row in a scratch buffer).
 *
 * Beside the owner checks, the two conversions between slots and pages that
 * every request makes on a cpu pool: pages_of checks that slots are whole,
 * aligned pages and names their pages, page_slots spells pages out as slots.
 * Each is one pass where numpy makes several (a bounds check, a reshape, a
 * gather, a compare, a reduction), and on the request path those passes were
 * most of what a call cost at page sizes above 1.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#include <stdarg.h>

#define CACHED_TAG (-1)  /* ownership.CACHED_TAG */

typedef struct {
    Py_buffer view;
    char *buf;
    Py_ssize_t n;
    Py_ssize_t stride;
} Array;

/* Take a 1-D integer buffer of `itemsize` bytes; on failure, set an error naming `what`. */
static int array_open(PyObject *obj, Array *a, Py_ssize_t itemsize, int writable, const char *what)
{
    int flags = PyBUF_STRIDES | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &a->view, flags) < 0)
        return -1;
    const char *fmt = a->view.format ? a->view.format : "B";
    char kind = fmt[strlen(fmt) - 1];
    if (a->view.ndim != 1 || a->view.itemsize != itemsize || !strchr("ilq", kind)) {
        PyErr_Format(PyExc_TypeError, "%s: expected a 1-D array of %zd-byte signed integers",
                     what, itemsize);
        PyBuffer_Release(&a->view);
        return -1;
    }
    a->buf = (char *)a->view.buf;
    a->n = a->view.shape[0];
    a->stride = a->view.strides[0];
    return 0;
}

/* The positional arguments of a METH_FASTCALL function, read as PyArg_ParseTuple reads
 * them ('O' an object, 'n' a Py_ssize_t from any integer) without building a tuple: these
 * functions run several times a request, and the tuple and the format cost about what
 * a short loop does. */
static int parse_args(const char *name, PyObject *const *args, Py_ssize_t nargs,
                      const char *format, ...)
{
    const Py_ssize_t want = (Py_ssize_t)strlen(format);
    if (nargs != want) {
        PyErr_Format(PyExc_TypeError, "%s() takes exactly %zd arguments (%zd given)", name,
                     want, nargs);
        return -1;
    }
    va_list va;
    va_start(va, format);
    for (Py_ssize_t i = 0; i < want; i++) {
        if (format[i] == 'O') {
            *va_arg(va, PyObject **) = args[i];
        } else {
            const Py_ssize_t v = PyNumber_AsSsize_t(args[i], PyExc_OverflowError);
            if (v == -1 && PyErr_Occurred()) {
                va_end(va);
                return -1;
            }
            *va_arg(va, Py_ssize_t *) = v;
        }
    }
    va_end(va);
    return 0;
}

#define I32(a, i) (*(int32_t *)((a).buf + (i) * (a).stride))
#define I64(a, i) (*(int64_t *)((a).buf + (i) * (a).stride))

/* callers_only(tag, stack, mark, pages, head) -> bool
 *
 * Whether every page is in the pool, a caller's (neither a node's nor free)
 * and listed once. Distinct tags prove distinct pages, and the pages of one
 * alloc carry consecutive tags, so the mark pass runs only for other rows.
 */
/* callers_only's test on opened arrays: 1 if it passes, 0 if not. */
static int callers_check(Array *tag, Array *stack, Array *mark, Array *pages, Py_ssize_t head)
{
    int ok = 1, consecutive = 1;
    const Py_ssize_t num = tag->n, k = pages->n;
    int64_t first = 0;
    for (Py_ssize_t i = 0; i < k && ok; i++) {
        int64_t p = I64(*pages, i);
        if (p < 0 || p >= num) {
            ok = 0;
            break;
        }
        int64_t w = I32(*tag, p);
        if (w == CACHED_TAG || (w >= head && w < stack->n && I64(*stack, w) == p)) {
            ok = 0; /* a node's, or free */
            break;
        }
        if (i == 0)
            first = w;
        else if (w != first + i)
            consecutive = 0;
    }
    if (ok && !consecutive) {
        if (k > num) {
            ok = 0; /* more pages than the pool has: some page twice */
        } else {
            for (Py_ssize_t i = 0; i < k; i++)
                I32(*mark, I64(*pages, i)) = (int32_t)i;
            for (Py_ssize_t i = 0; i < k && ok; i++)
                ok = I32(*mark, I64(*pages, i)) == (int32_t)i; /* a repeat overwrote it */
        }
    }
    return ok;
}

static PyObject *callers_only(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *tag_o, *stack_o, *mark_o, *pages_o;
    Py_ssize_t head;
    if (parse_args("callers_only", args, nargs, "OOOOn", &tag_o, &stack_o, &mark_o, &pages_o,
                   &head) < 0)
        return NULL;
    Array tag, stack, mark, pages;
    if (array_open(tag_o, &tag, 4, 0, "tag") < 0)
        return NULL;
    if (array_open(stack_o, &stack, 8, 0, "stack") < 0)
        goto fail_tag;
    if (array_open(mark_o, &mark, 4, 1, "mark") < 0)
        goto fail_stack;
    if (array_open(pages_o, &pages, 8, 0, "pages") < 0)
        goto fail_mark;
    int ok = callers_check(&tag, &stack, &mark, &pages, head);
    PyBuffer_Release(&pages.view);
    PyBuffer_Release(&mark.view);
    PyBuffer_Release(&stack.view);
    PyBuffer_Release(&tag.view);
    return PyBool_FromLong(ok);

fail_mark:
    PyBuffer_Release(&mark.view);
fail_stack:
    PyBuffer_Release(&stack.view);
fail_tag:
    PyBuffer_Release(&tag.view);
    return NULL;
}

/* adopt(tag, pages): a cache node owns these caller pages (checked by callers_only). */
static PyObject *adopt(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *tag_o, *pages_o;
    if (parse_args("adopt", args, nargs, "OO", &tag_o, &pages_o) < 0)
        return NULL;
    Array tag, pages;
    if (array_open(tag_o, &tag, 4, 1, "tag") < 0)
        return NULL;
    if (array_open(pages_o, &pages, 8, 0, "pages") < 0) {
        PyBuffer_Release(&tag.view);
        return NULL;
    }
    for (Py_ssize_t i = 0; i < pages.n; i++)
        I32(tag, I64(pages, i)) = CACHED_TAG;
    PyBuffer_Release(&pages.view);
    PyBuffer_Release(&tag.view);
    Py_RETURN_NONE;
}

/* Put the pages of `part` on the stack from position h up, each tagged with its position. */
static Py_ssize_t push_part(Array *tag, Array *stack, Array *part, Py_ssize_t h)
{
    for (Py_ssize_t i = 0; i < part->n; i++) {
        int64_t p = I64(*part, i);
        I64(*stack, h) = p;
        I32(*tag, p) = (int32_t)h;
        h++;
    }
    return h;
}

/* The arguments of push and release, (tag, stack, parts, head), opened: every array of
 * `parts` once (a buffer export costs about what a short loop does). */
#define FEW_PARTS 8
typedef struct {
    Array tag, stack;
    Array few[FEW_PARTS]; /* the parts, when there are this few */
    Array *parts;         /* `few`, or a PyMem block */
    Py_ssize_t n_parts, opened, total, head;
} FreeListCall;

static void free_list_close(FreeListCall *c)
{
    for (Py_ssize_t j = 0; j < c->opened; j++)
        PyBuffer_Release(&c->parts[j].view);
    if (c->parts != c->few)
        PyMem_Free(c->parts);
    PyBuffer_Release(&c->stack.view);
    PyBuffer_Release(&c->tag.view);
}

static int free_list_open(const char *name, PyObject *const *args, Py_ssize_t nargs,
                          FreeListCall *c)
{
    PyObject *tag_o, *stack_o, *parts_o;
    if (parse_args(name, args, nargs, "OOOn", &tag_o, &stack_o, &parts_o, &c->head) < 0)
        return -1;
    PyObject *seq = PySequence_Fast(parts_o, "parts must be a sequence of arrays");
    if (seq == NULL)
        return -1;
    if (array_open(tag_o, &c->tag, 4, 1, "tag") < 0)
        goto fail_seq;
    if (array_open(stack_o, &c->stack, 8, 1, "stack") < 0)
        goto fail_tag;
    c->n_parts = PySequence_Fast_GET_SIZE(seq);
    c->opened = c->total = 0;
    c->parts = c->few;
    if (c->n_parts > FEW_PARTS) {
        c->parts = PyMem_Malloc((size_t)c->n_parts * sizeof(Array));
        if (c->parts == NULL) {
            PyErr_NoMemory();
            goto fail_stack;
        }
    }
    for (; c->opened < c->n_parts; c->opened++) {
        Array *part = &c->parts[c->opened];
        if (array_open(PySequence_Fast_GET_ITEM(seq, c->opened), part, 8, 0, "pages") < 0) {
            free_list_close(c);
            Py_DECREF(seq);
            return -1;
        }
        c->total += part->n;
    }
    Py_DECREF(seq); /* the open buffers keep the arrays' memory */
    return 0;
fail_stack:
    PyBuffer_Release(&c->stack.view);
fail_tag:
    PyBuffer_Release(&c->tag.view);
fail_seq:
    Py_DECREF(seq);
    return -1;
}

/* push(tag, stack, parts, head) -> new head
 *
 * The pages of every array in `parts` are free again, in front of `head`;
 * the caller has checked that they may be.
 */
static PyObject *push(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    FreeListCall c;
    if (free_list_open("push", args, nargs, &c) < 0)
        return NULL;
    PyObject *result = NULL;
    if (c.total > c.head) {
        PyErr_Format(PyExc_ValueError, "push: %zd pages, but only %zd are handed out", c.total,
                     c.head);
    } else {
        Py_ssize_t h = c.head - c.total;
        for (Py_ssize_t j = 0; j < c.n_parts; j++)
            h = push_part(&c.tag, &c.stack, &c.parts[j], h);
        result = PyLong_FromSsize_t(c.head - c.total);
    }
    free_list_close(&c);
    return result;
}

/* release(tag, stack, parts, head) -> new head, or -1 with nothing changed
 *
 * A cache gives back its nodes' pages: every page of every array must be in
 * the pool, a node's, and listed once in the whole call; then they are
 * pushed as `push` does. One pass checks and pushes: a page is retagged with
 * its new position as it goes on the stack, so a repeat no longer reads as a
 * node's. The stack is written only below `head`, where no entry is read
 * while `head` stays (a page there is a caller's whatever the stack holds),
 * so a failed check just puts the tags it changed back.
 */
static PyObject *release(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    FreeListCall c;
    if (free_list_open("release", args, nargs, &c) < 0)
        return NULL;
    Py_ssize_t result = -1;
    if (c.total <= c.head) { /* (more pages than are handed out: some page twice) */
        const Py_ssize_t num = c.tag.n, start = c.head - c.total;
        Py_ssize_t h = start, j = 0, i = 0;
        for (; j < c.n_parts; j++) {
            const Array *part = &c.parts[j];
            for (i = 0; i < part->n; i++) {
                const int64_t p = I64(*part, i);
                if (p < 0 || p >= num || I32(c.tag, p) != CACHED_TAG)
                    goto undo;
                I64(c.stack, h) = p;
                I32(c.tag, p) = (int32_t)h;
                h++;
            }
        }
        result = start;
        goto done;
    undo: /* the pages pushed before the culprit (parts 0..j-1, and part j up to i) */
        for (Py_ssize_t jj = 0; jj <= j; jj++) {
            const Array *part = &c.parts[jj];
            const Py_ssize_t stop = jj == j ? i : part->n;
            for (Py_ssize_t ii = 0; ii < stop; ii++)
                I32(c.tag, I64(*part, ii)) = CACHED_TAG;
        }
    }
done:
    free_list_close(&c);
    return PyLong_FromSsize_t(result);
}

/* The page of each page of `slots`, written to out[0:k] (k = len(slots) / page_size),
 * if `slots` are whole, aligned pages of a pool of `size` slots, each page's slots in
 * order (as alloc hands them out): every slot is compared. Otherwise -1, and `out`
 * holds nothing of use. `size` is a whole number of pages; out holds k entries.
 */
static Py_ssize_t slots_to_pages(Array *slots, Py_ssize_t P, Py_ssize_t size, Array *out)
{
    const Py_ssize_t n = slots->n, k = n / P;
    if (n % P)
        return -1;
    const int64_t last = (int64_t)size - P; /* the highest first slot of a page */
    const int contiguous = slots->stride == 8;
    const int64_t *prev = NULL; /* a page found whole: the next ones are compared with it */
    int64_t prev_first = 0;
    for (Py_ssize_t i = 0, s = 0; i < k; i++, s += P) {
        const int64_t first = I64(*slots, s);
        if (first < 0 || first > last || first % P)
            return -1;
        uint64_t differ = 0; /* branch-free passes over the page */
        if (contiguous && prev != NULL) {
            /* Whole iff each slot is the previous page's, shifted by the same distance:
             * two loads and a compare per slot, which the compiler vectorises. */
            const int64_t *row = (const int64_t *)slots->buf + s;
            const int64_t shift = first - prev_first;
            for (Py_ssize_t j = 1; j < P; j++)
                differ |= (uint64_t)((row[j] - prev[j]) ^ shift);
        } else {
            for (Py_ssize_t j = 1; j < P; j++)
                differ |= (uint64_t)(I64(*slots, s + j) ^ (first + j));
            if (contiguous) {
                prev = (const int64_t *)slots->buf + s;
                prev_first = first;
            }
        }
        if (differ)
            return -1;
        I64(*out, i) = first / P;
    }
    return k;
}

/* The arguments shared by pages_of and caller_slots: slots, page size, pool size, out. */
static int slots_open(PyObject *slots_o, Py_ssize_t P, PyObject *out_o, Array *slots, Array *out)
{
    if (P < 1) {
        PyErr_Format(PyExc_ValueError, "page_size %zd < 1", P);
        return -1;
    }
    if (array_open(slots_o, slots, 8, 0, "slots") < 0)
        return -1;
    if (array_open(out_o, out, 8, 1, "out") < 0) {
        PyBuffer_Release(&slots->view);
        return -1;
    }
    if (out->n < slots->n / P) {
        PyErr_Format(PyExc_ValueError, "out holds %zd pages, %zd needed", out->n, slots->n / P);
        PyBuffer_Release(&out->view);
        PyBuffer_Release(&slots->view);
        return -1;
    }
    return 0;
}

/* pages_of(slots, page_size, size, out) -> k, or -1
 *
 * slots_to_pages: the pages of `slots` written to out[:k] if they are whole, aligned
 * pages of the pool, else -1 (KVPool._whole_pages names the culprits).
 */
static PyObject *pages_of(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *slots_o, *out_o;
    Py_ssize_t P, size;
    if (parse_args("pages_of", args, nargs, "OnnO", &slots_o, &P, &size, &out_o) < 0)
        return NULL;
    Array slots, out;
    if (slots_open(slots_o, P, out_o, &slots, &out) < 0)
        return NULL;
    Py_ssize_t k = slots_to_pages(&slots, P, size, &out);
    PyBuffer_Release(&out.view);
    PyBuffer_Release(&slots.view);
    return PyLong_FromSsize_t(k);
}

/* caller_slots(tag, stack, mark, slots, page_size, head, out) -> k, or -1
 *
 * pages_of and callers_only in one call, as a cache's insert and a pool's free
 * check the slots a caller hands over: the pages of `slots` written to out[:k]
 * if they are whole, aligned pages of the pool, each a caller's and listed once;
 * else -1 (KVPool.caller_pages names the culprits). The pool's size is the tags'.
 */
static PyObject *caller_slots(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *tag_o, *stack_o, *mark_o, *slots_o, *out_o;
    Py_ssize_t P, head;
    if (parse_args("caller_slots", args, nargs, "OOOOnnO", &tag_o, &stack_o, &mark_o, &slots_o,
                   &P, &head, &out_o) < 0)
        return NULL;
    Array tag, stack, mark, slots, out;
    if (array_open(tag_o, &tag, 4, 0, "tag") < 0)
        return NULL;
    if (array_open(stack_o, &stack, 8, 0, "stack") < 0)
        goto fail_tag;
    if (array_open(mark_o, &mark, 4, 1, "mark") < 0)
        goto fail_stack;
    if (slots_open(slots_o, P, out_o, &slots, &out) < 0)
        goto fail_mark;
    Py_ssize_t k = slots_to_pages(&slots, P, tag.n * P, &out);
    if (k >= 0) {
        Array pages = out;
        pages.n = k;
        if (!callers_check(&tag, &stack, &mark, &pages, head))
            k = -1;
    }
    PyBuffer_Release(&out.view);
    PyBuffer_Release(&slots.view);
    PyBuffer_Release(&mark.view);
    PyBuffer_Release(&stack.view);
    PyBuffer_Release(&tag.view);
    return PyLong_FromSsize_t(k);

fail_mark:
    PyBuffer_Release(&mark.view);
fail_stack:
    PyBuffer_Release(&stack.view);
fail_tag:
    PyBuffer_Release(&tag.view);
    return NULL;
}

/* free_slots(tag, stack, mark, slots, page_size, head) -> new head, or -1
 *
 * KVPool.free in one call: caller_slots' checks on `slots`, then their pages
 * pushed back on the free list in front of `head`, as push does. -1 (nothing
 * changed) where a check fails: KVPool.free then names the culprits.
 */
static PyObject *free_slots(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *tag_o, *stack_o, *mark_o, *slots_o;
    Py_ssize_t P, head;
    if (parse_args("free_slots", args, nargs, "OOOOnn", &tag_o, &stack_o, &mark_o, &slots_o, &P,
                   &head) < 0)
        return NULL;
    if (P < 1) {
        PyErr_Format(PyExc_ValueError, "page_size %zd < 1", P);
        return NULL;
    }
    Array tag, stack, mark, slots;
    if (array_open(tag_o, &tag, 4, 1, "tag") < 0)
        return NULL;
    if (array_open(stack_o, &stack, 8, 1, "stack") < 0)
        goto fail_tag;
    if (array_open(mark_o, &mark, 4, 1, "mark") < 0)
        goto fail_stack;
    if (array_open(slots_o, &slots, 8, 0, "slots") < 0)
        goto fail_mark;
    PyObject *result = NULL;
    Array pages = slots; /* at page size 1 the slots are the pages */
    int64_t small[64];
    int64_t *buf = NULL;
    Py_ssize_t k = slots.n / P;
    if (P > 1) {
        buf = k <= 64 ? small : PyMem_Malloc((size_t)(k ? k : 1) * sizeof(int64_t));
        if (buf == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        pages.buf = (char *)buf;
        pages.n = k;
        pages.stride = 8;
        k = slots_to_pages(&slots, P, tag.n * P, &pages);
    }
    if (k < 0 || k > head || !callers_check(&tag, &stack, &mark, &pages, head)) {
        result = PyLong_FromLong(-1);
    } else {
        push_part(&tag, &stack, &pages, head - k);
        result = PyLong_FromSsize_t(head - k);
    }
done:
    if (buf != NULL && buf != small)
        PyMem_Free(buf);
    PyBuffer_Release(&slots.view);
    PyBuffer_Release(&mark.view);
    PyBuffer_Release(&stack.view);
    PyBuffer_Release(&tag.view);
    return result;

fail_mark:
    PyBuffer_Release(&mark.view);
fail_stack:
    PyBuffer_Release(&stack.view);
fail_tag:
    PyBuffer_Release(&tag.view);
    return NULL;
}

/* page_slots(parts, page_size, out) -> the slots written
 *
 * The slots of the pages of every array in `parts`, in order, written to the front
 * of `out`: page p is slots p*page_size .. p*page_size + page_size - 1 (at page size
 * 1 the pages are the slots: a copy). Nothing is read from the pool; `out` must hold
 * them all.
 */
static PyObject *page_slots(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *parts_o, *out_o;
    Py_ssize_t page_size;
    if (parse_args("page_slots", args, nargs, "OnO", &parts_o, &page_size, &out_o) < 0)
        return NULL;
    const Py_ssize_t P = page_size; /* a copy no store can reach: the loops below vectorise */
    if (P < 1) {
        PyErr_Format(PyExc_ValueError, "page_slots: page_size %zd < 1", P);
        return NULL;
    }
    PyObject *parts = PySequence_Fast(parts_o, "parts must be a sequence of arrays");
    if (parts == NULL)
        return NULL;
    Array out;
    if (array_open(out_o, &out, 8, 1, "out") < 0) {
        Py_DECREF(parts);
        return NULL;
    }
    Py_ssize_t w = 0;
    int failed = 0;
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(parts) && !failed; j++) {
        Array part;
        if (array_open(PySequence_Fast_GET_ITEM(parts, j), &part, 8, 0, "pages") < 0) {
            failed = 1;
            break;
        }
        if (part.n > (out.n - w) / P) {
            PyErr_Format(PyExc_ValueError, "page_slots: out holds %zd slots, more needed", out.n);
            failed = 1;
        } else if (P == 1 && part.stride == 8 && out.stride == 8) {
            memcpy(out.buf + w * 8, part.buf, (size_t)part.n * 8);
            w += part.n;
        } else if (out.stride == 8) {
            /* The first page spelled out; each later one is a copy of it, shifted (a load,
             * an add and a store per slot, which the compiler vectorises). */
            int64_t *o = (int64_t *)out.buf + w;
            const int64_t *ramp = NULL;
            int64_t ramp_first = 0;
            for (Py_ssize_t i = 0; i < part.n; i++) {
                const int64_t first = I64(part, i) * P;
                if (ramp == NULL) {
                    for (Py_ssize_t s = 0; s < P; s++)
                        o[s] = first + s;
                    ramp = o;
                    ramp_first = first;
                } else {
                    const int64_t shift = first - ramp_first;
                    for (Py_ssize_t s = 0; s < P; s++)
                        o[s] = ramp[s] + shift;
                }
                o += P;
            }
            w += part.n * P;
        } else {
            for (Py_ssize_t i = 0; i < part.n; i++) {
                const int64_t first = I64(part, i) * P;
                for (Py_ssize_t s = 0; s < P; s++)
                    I64(out, w + s) = first + s;
                w += P;
            }
        }
        PyBuffer_Release(&part.view);
    }
    PyBuffer_Release(&out.view);
    Py_DECREF(parts);
    if (failed)
        return NULL;
    return PyLong_FromSsize_t(w);
}

#define PREFIX_BLOCK 512 /* bytes common_prefix compares at once: 64 tokens */

/* common_prefix(a, b, offset) -> tokens
 *
 * How many int64 tokens `a` (a node's key, bytes) shares with `b` (a request's
 * key, bytes-like) read from byte `offset` on: radix_evict.cache.tree.common_prefix_len,
 * one pass where numpy makes three (two views, a compare, a search). Both are
 * contiguous runs of bytes, whole tokens long.
 */
static PyObject *common_prefix(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    PyObject *a_o, *b_o;
    Py_ssize_t offset;
    if (parse_args("common_prefix", args, nargs, "OOn", &a_o, &b_o, &offset) < 0)
        return NULL;
    Py_buffer a, b;
    if (PyObject_GetBuffer(a_o, &a, PyBUF_SIMPLE) < 0)
        return NULL;
    if (PyObject_GetBuffer(b_o, &b, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&a);
        return NULL;
    }
    Py_ssize_t result = -1;
    if (offset < 0 || offset > b.len || offset % 8 || a.len % 8 || b.len % 8) {
        PyErr_Format(PyExc_ValueError,
                     "common_prefix: keys of %zd and %zd bytes, offset %zd: not whole tokens",
                     a.len, b.len, offset);
    } else {
        const char *x = (const char *)a.buf, *y = (const char *)b.buf + offset;
        Py_ssize_t n = a.len < b.len - offset ? a.len : b.len - offset, i = 0;
        /* Equal blocks first (memcmp's wide compares: a walk mostly matches whole nodes),
         * then token by token inside the block that differs. */
        while (i + PREFIX_BLOCK <= n && memcmp(x + i, y + i, PREFIX_BLOCK) == 0)
            i += PREFIX_BLOCK;
        while (i + 8 <= n && memcmp(x + i, y + i, 8) == 0)
            i += 8;
        result = i / 8;
    }
    PyBuffer_Release(&b);
    PyBuffer_Release(&a);
    return result < 0 ? NULL : PyLong_FromSsize_t(result);
}

static PyMethodDef methods[] = {
    {"common_prefix", (PyCFunction)(void (*)(void))common_prefix, METH_FASTCALL,
     "common_prefix(a, b, offset) -> the int64 tokens a shares with b from byte offset on."},
    {"caller_slots", (PyCFunction)(void (*)(void))caller_slots, METH_FASTCALL,
     "caller_slots(tag, stack, mark, slots, page_size, head, out) -> k, or -1 unless slots "
     "are whole aligned pages of the pool, each a caller's, once (their pages in out[:k])."},
    {"free_slots", (PyCFunction)(void (*)(void))free_slots, METH_FASTCALL,
     "free_slots(tag, stack, mark, slots, page_size, head) -> new head, or -1 (nothing "
     "changed) unless slots are whole aligned pages of the pool, each a caller's, once."},
    {"pages_of", (PyCFunction)(void (*)(void))pages_of, METH_FASTCALL,
     "pages_of(slots, page_size, size, out) -> k, or -1 unless slots are whole aligned pages "
     "of the pool (their pages written to out[:k])."},
    {"page_slots", (PyCFunction)(void (*)(void))page_slots, METH_FASTCALL,
     "page_slots(parts, page_size, out) -> n: the slots of the pages of parts, written to "
     "out[:n]."},
    {"callers_only", (PyCFunction)(void (*)(void))callers_only, METH_FASTCALL,
     "callers_only(tag, stack, mark, pages, head) -> bool: every page in the pool, a caller's, once."},
    {"adopt", (PyCFunction)(void (*)(void))adopt, METH_FASTCALL,
     "adopt(tag, pages): a cache node owns these caller pages."},
    {"push", (PyCFunction)(void (*)(void))push, METH_FASTCALL,
     "push(tag, stack, parts, head) -> new head: the pages of parts are free again."},
    {"release", (PyCFunction)(void (*)(void))release, METH_FASTCALL,
     "release(tag, stack, parts, head) -> new head, or -1 (nothing changed) unless every page "
     "is a node's, once."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_page_kernel",
    "The per-page loops of a cpu pool: owner checks (ownership.py), slots to pages and "
    "back (pool.py, slots.py), common prefixes (tree.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__page_kernel(void) { return PyModule_Create(&module); }
