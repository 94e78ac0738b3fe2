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
 * tag and mark int32, stack and pages int64. Nothing here allocates.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define CACHED_TAG (-1)  /* ownership.CACHED_TAG */
#define RELEASING_TAG (-2) /* a page seen once by the release now under way */

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

#define I32(a, i) (*(int32_t *)((a).buf + (i) * (a).stride))
#define I64(a, i) (*(int64_t *)((a).buf + (i) * (a).stride))

/* callers_only(tag, stack, mark, pages, head) -> bool
 *
 * Whether every page is in the pool, a caller's (neither a node's nor free)
 * and listed once. Distinct tags prove distinct pages, and the pages of one
 * alloc carry consecutive tags, so the mark pass runs only for other rows.
 */
static PyObject *callers_only(PyObject *self, PyObject *args)
{
    PyObject *tag_o, *stack_o, *mark_o, *pages_o;
    Py_ssize_t head;
    if (!PyArg_ParseTuple(args, "OOOOn", &tag_o, &stack_o, &mark_o, &pages_o, &head))
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

    int ok = 1, consecutive = 1;
    const Py_ssize_t num = tag.n, k = pages.n;
    int64_t first = 0;
    for (Py_ssize_t i = 0; i < k && ok; i++) {
        int64_t p = I64(pages, i);
        if (p < 0 || p >= num) {
            ok = 0;
            break;
        }
        int64_t w = I32(tag, p);
        if (w == CACHED_TAG || (w >= head && w < stack.n && I64(stack, w) == p)) {
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
                I32(mark, I64(pages, i)) = (int32_t)i;
            for (Py_ssize_t i = 0; i < k && ok; i++)
                ok = I32(mark, I64(pages, i)) == (int32_t)i; /* a repeat overwrote it */
        }
    }
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
static PyObject *adopt(PyObject *self, PyObject *args)
{
    PyObject *tag_o, *pages_o;
    if (!PyArg_ParseTuple(args, "OO", &tag_o, &pages_o))
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

/* Tag RELEASING each page of `part` that is in the pool and a node's; returns how many
 * were (all of them, or the index of the first that is not). */
static Py_ssize_t mark_releasing(Array *tag, Array *part)
{
    const Py_ssize_t num = tag->n;
    for (Py_ssize_t i = 0; i < part->n; i++) {
        int64_t p = I64(*part, i);
        if (p < 0 || p >= num || I32(*tag, p) != CACHED_TAG)
            return i;
        I32(*tag, p) = RELEASING_TAG;
    }
    return part->n;
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

/* The number of pages in all of `parts` (arrays opened and closed one at a time), or -1. */
static Py_ssize_t count_pages(PyObject *seq)
{
    Py_ssize_t total = 0;
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq); j++) {
        Array part;
        if (array_open(PySequence_Fast_GET_ITEM(seq, j), &part, 8, 0, "pages") < 0)
            return -1;
        total += part.n;
        PyBuffer_Release(&part.view);
    }
    return total;
}

/* Push every page of `parts` from position h up; the arrays opened already once. */
static void push_parts(Array *tag, Array *stack, PyObject *seq, Py_ssize_t h)
{
    for (Py_ssize_t j = 0; j < PySequence_Fast_GET_SIZE(seq); j++) {
        Array part;
        if (array_open(PySequence_Fast_GET_ITEM(seq, j), &part, 8, 0, "pages") < 0) {
            PyErr_Clear(); /* opened fine a moment ago; nothing else can have changed it */
            continue;
        }
        h = push_part(tag, stack, &part, h);
        PyBuffer_Release(&part.view);
    }
}

/* The arguments of push and release, (tag, stack, parts, head), opened. */
typedef struct {
    Array tag, stack;
    PyObject *parts; /* PySequence_Fast of int64 arrays */
    Py_ssize_t head;
} FreeListCall;

static int free_list_open(PyObject *args, FreeListCall *c)
{
    PyObject *tag_o, *stack_o, *parts_o;
    if (!PyArg_ParseTuple(args, "OOOn", &tag_o, &stack_o, &parts_o, &c->head))
        return -1;
    c->parts = PySequence_Fast(parts_o, "parts must be a sequence of arrays");
    if (c->parts == NULL)
        return -1;
    if (array_open(tag_o, &c->tag, 4, 1, "tag") < 0)
        goto fail_parts;
    if (array_open(stack_o, &c->stack, 8, 1, "stack") < 0)
        goto fail_tag;
    return 0;
fail_tag:
    PyBuffer_Release(&c->tag.view);
fail_parts:
    Py_DECREF(c->parts);
    return -1;
}

static void free_list_close(FreeListCall *c)
{
    PyBuffer_Release(&c->stack.view);
    PyBuffer_Release(&c->tag.view);
    Py_DECREF(c->parts);
}

/* push(tag, stack, parts, head) -> new head
 *
 * The pages of every array in `parts` are free again, in front of `head`;
 * the caller has checked that they may be.
 */
static PyObject *push(PyObject *self, PyObject *args)
{
    FreeListCall c;
    if (free_list_open(args, &c) < 0)
        return NULL;
    PyObject *result = NULL;
    Py_ssize_t total = count_pages(c.parts); /* -1: an error is set */
    if (total > c.head) {
        PyErr_Format(PyExc_ValueError, "push: %zd pages, but only %zd are handed out", total,
                     c.head);
    } else if (total >= 0) {
        push_parts(&c.tag, &c.stack, c.parts, c.head - total);
        result = PyLong_FromSsize_t(c.head - total);
    }
    free_list_close(&c);
    return result;
}

/* release(tag, stack, parts, head) -> new head, or -1 with nothing changed
 *
 * A cache gives back its nodes' pages: every page of every array must be in
 * the pool, a node's, and listed once in the whole call; then they are
 * pushed as `push` does. A page seen is tagged RELEASING while the check
 * runs, so a repeat shows at once; a failed check puts the tags back.
 */
static PyObject *release(PyObject *self, PyObject *args)
{
    FreeListCall c;
    if (free_list_open(args, &c) < 0)
        return NULL;
    PyObject *result = NULL;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(c.parts);
    Py_ssize_t total = 0, bad_j = -1, bad_i = 0;
    for (Py_ssize_t j = 0; j < n && bad_j < 0; j++) {
        Array part;
        if (array_open(PySequence_Fast_GET_ITEM(c.parts, j), &part, 8, 0, "pages") < 0) {
            bad_j = j; /* the error stays set; none of this array's tags were touched */
            break;
        }
        Py_ssize_t done = mark_releasing(&c.tag, &part);
        if (done < part.n) {
            bad_j = j;
            bad_i = done;
        }
        total += part.n;
        PyBuffer_Release(&part.view);
    }
    if (bad_j < 0 && total > c.head)
        bad_j = n; /* cannot happen while each page has one tag; undo all the same */
    if (bad_j >= 0) {
        /* Put back the tags seen before the culprit (the culprit's own was not touched). */
        for (Py_ssize_t j = 0; j <= bad_j && j < n; j++) {
            Array part;
            if (PyErr_Occurred() && j == bad_j)
                break; /* the array that failed to open */
            if (array_open(PySequence_Fast_GET_ITEM(c.parts, j), &part, 8, 0, "pages") < 0)
                break; /* opened fine a moment ago: cannot happen */
            Py_ssize_t stop = j == bad_j ? bad_i : part.n;
            for (Py_ssize_t i = 0; i < stop; i++)
                I32(c.tag, I64(part, i)) = CACHED_TAG;
            PyBuffer_Release(&part.view);
        }
        if (!PyErr_Occurred())
            result = PyLong_FromLong(-1);
    } else {
        push_parts(&c.tag, &c.stack, c.parts, c.head - total);
        result = PyLong_FromSsize_t(c.head - total);
    }
    free_list_close(&c);
    return result;
}

static PyMethodDef methods[] = {
    {"callers_only", callers_only, METH_VARARGS,
     "callers_only(tag, stack, mark, pages, head) -> bool: every page in the pool, a caller's, once."},
    {"adopt", adopt, METH_VARARGS, "adopt(tag, pages): a cache node owns these caller pages."},
    {"push", push, METH_VARARGS,
     "push(tag, stack, parts, head) -> new head: the pages of parts are free again."},
    {"release", release, METH_VARARGS,
     "release(tag, stack, parts, head) -> new head, or -1 (nothing changed) unless every page "
     "is a node's, once."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_page_kernel",
    "The per-page loops of PageOwners on a cpu pool (see ownership.py).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__page_kernel(void) { return PyModule_Create(&module); }
