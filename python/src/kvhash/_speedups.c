/*
 * kvhash._speedups: Python ints to and from packed C arrays, for the list
 * API. It converts arguments and results only; every hash is the library's.
 *
 * Why it exists: for a 128k-token prompt the library hashes in ~40 us, while
 * array('I').fromlist takes ~0.4-0.7 ms to read the list of ints and
 * array('Q').tolist ~0.1 ms per 8k hashes. Reading an int's digits directly
 * and writing the packed array in one loop is several times faster.
 *
 * The contract with kvhash._ints, whose pure-Python fallback behaves
 * identically (tests/test_speedups.py compares the two):
 *
 * - an item that is an int (bool and other subclasses included) is read as
 *   its value, without calling any of its methods; any other item with
 *   __index__ is converted with it; anything else is a TypeError
 *   "<what>[<i>] must be an int, not <type>";
 * - a value outside [0, 2**bits) is an OverflowError
 *   "<what>[<i>] must be in [0, 2**bits), got <value>" (an int of more than
 *   128 bits is described by its size: printing it could fail or flood);
 * - the first bad item wins; exceptions raised by __index__ propagate;
 * - a list resized by an __index__ call is a RuntimeError, as in
 *   array.fromlist.
 *
 * Every function holds the GIL (it reads Python objects); the library calls
 * that follow release it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <string.h>

#if PY_VERSION_HEX < 0x030B0000
/* Python.h includes it from 3.11 on. */
#include <longintrepr.h>
#endif

/* Values longer than this are described by their bit length in messages:
 * their decimal text is long, and beyond 4300 digits str() refuses. Keep in
 * step with _PRINTABLE_BITS in _ints.py. */
#define PRINTABLE_BITS 128

/* Reads int `v` (PyLong_Check is true) into *out. Returns 1 when its value
 * is in [0, max], 0 when it is not (no exception set), -1 on error.
 *
 * Up to 3.13 it reads the digits, through the layout the headers document
 * for the version it is compiled against (the wheel is per version): a sign
 * and a count of digits (Py_SIZE up to 3.11, lv_tag in 3.12-3.13).
 * Later versions go through the public API. */
#if PY_VERSION_HEX < 0x030E0000
#define READ_DIGITS 1
#endif

static inline int
read_int(PyObject *v, uint64_t max, uint64_t *out)
{
#ifdef READ_DIGITS
#if PY_VERSION_HEX < 0x030C0000
    Py_ssize_t size = Py_SIZE(v);
    int negative = size < 0;
    const digit *d = ((PyLongObject *)v)->ob_digit;
#else
    uintptr_t tag = ((PyLongObject *)v)->long_value.lv_tag;
    int negative = (tag & _PyLong_SIGN_MASK) == 2;
    Py_ssize_t size = (Py_ssize_t)(tag >> _PyLong_NON_SIZE_BITS);
    const digit *d = ((PyLongObject *)v)->long_value.ob_digit;
#endif
    if (negative)
        return 0;
    uint64_t x = 0;
#if PyLong_SHIFT == 30
    /* Token ids over the u32 range mix one- and two-digit ints at random;
     * a branch on the count mispredicts often enough to make the loop 3-4
     * times slower, so 0-2 digits are combined without one. Only digits
     * that exist are read: d[0] always may be (CPython allocates one digit
     * even for 0). */
    if ((size_t)size <= 2) {
        uint64_t lo = d[0], hi = d[size > 0 ? size - 1 : 0];
        uint64_t two = (uint64_t)0 - (uint64_t)(size == 2), nonzero = (uint64_t)0 - (uint64_t)(size != 0);
        x = (((hi << PyLong_SHIFT) & two) | lo) & nonzero;
        if (x > max)
            return 0;
        *out = x;
        return 1;
    }
#endif
    /* Hashes take three digits; a long int stops the loop as soon as its
     * value cannot fit 64 bits. */
    for (Py_ssize_t i = size; i-- > 0;) {
        if (x >> (64 - PyLong_SHIFT))
            return 0;
        x = (x << PyLong_SHIFT) | d[i];
    }
    if (x > max)
        return 0;
    *out = x;
    return 1;
#else
    if (PyUnstable_Long_IsCompact((PyLongObject *)v)) {
        Py_ssize_t x = PyUnstable_Long_CompactValue((PyLongObject *)v);
        if (x < 0 || (uint64_t)x > max)
            return 0;
        *out = (uint64_t)x;
        return 1;
    }
    /* Where long is 64-bit, PyLong_AsUnsignedLong: a loop over the digits.
     * (PyLong_AsUnsignedLongLong goes through a byte array in 3.12-3.13,
     * several times slower.) */
#if SIZEOF_LONG >= 8
    unsigned long long x = PyLong_AsUnsignedLong(v);
#else
    unsigned long long x = PyLong_AsUnsignedLongLong(v);
#endif
    if (x == (unsigned long long)-1 && PyErr_Occurred()) {
        /* Negative or wider than 64 bits: out of range, not an error. */
        if (!PyErr_ExceptionMatches(PyExc_OverflowError))
            return -1;
        PyErr_Clear();
        return 0;
    }
    if (x > max)
        return 0;
    *out = x;
    return 1;
#endif
}

/* Sets TypeError for item `i`, named by its type's __name__ (what Python's
 * type(item).__name__ gives; tp_name is qualified for static types). */
static void
type_error(PyObject *what, Py_ssize_t i, PyObject *item)
{
    PyObject *name = PyObject_GetAttrString((PyObject *)Py_TYPE(item), "__name__");
    if (name == NULL)
        return;
    PyErr_Format(PyExc_TypeError, "%U[%zd] must be an int, not %S", what, i, name);
    Py_DECREF(name);
}

/* Sets OverflowError for item `i`, whose int value is `value`. Only int's
 * own methods are called: an int subclass may override str or bit_length. */
static void
range_error(PyObject *what, Py_ssize_t i, PyObject *value, int bits)
{
    PyObject *nbits = PyObject_CallMethod((PyObject *)&PyLong_Type, "bit_length", "O", value);
    if (nbits == NULL)
        return;
    Py_ssize_t n = PyLong_AsSsize_t(nbits);
    Py_DECREF(nbits);
    if (n == -1 && PyErr_Occurred())
        return;
    if (n <= PRINTABLE_BITS) {
        PyObject *text = PyNumber_ToBase(value, 10);
        if (text == NULL)
            return;
        PyErr_Format(PyExc_OverflowError, "%U[%zd] must be in [0, 2**%d), got %U", what, i, bits, text);
        Py_DECREF(text);
        return;
    }
    PyObject *zero = PyLong_FromLong(0);
    if (zero == NULL)
        return;
    PyObject *negative = PyLong_Type.tp_richcompare(value, zero, Py_LT);
    Py_DECREF(zero);
    if (negative == NULL)
        return;
    PyErr_Format(PyExc_OverflowError, "%U[%zd] must be in [0, 2**%d), got %s int of %zd bits", what, i, bits,
                 negative == Py_True ? "a negative" : "an", n);
    Py_DECREF(negative);
}

/* The slow path: item `i` of `seq` (of length n) is not an int. Returns 0
 * with *out set, or -1 with an exception set. */
static int
read_index(PyObject *seq, Py_ssize_t n, PyObject *what, Py_ssize_t i, PyObject *item, uint64_t max, int bits,
           uint64_t *out)
{
    PyNumberMethods *nb = Py_TYPE(item)->tp_as_number;
    if (nb == NULL || nb->nb_index == NULL) {
        type_error(what, i, item);
        return -1;
    }
    /* __index__ runs arbitrary code, which may drop the list's reference to
     * the item while it runs. */
    Py_INCREF(item);
    PyObject *v = PyNumber_Index(item);
    Py_DECREF(item);
    if (v == NULL)
        return -1;
    int ok = read_int(v, max, out);
    if (ok == 0)
        range_error(what, i, v, bits);
    Py_DECREF(v);
    if (ok <= 0)
        return -1;
    /* That code may also have resized the list, leaving the loop's bound
     * stale. array.fromlist raises the same error. */
    if (PySequence_Fast_GET_SIZE(seq) != n) {
        PyErr_SetString(PyExc_RuntimeError, "list changed size during iteration");
        return -1;
    }
    return 0;
}

/* Inlined into both callers, so that `bits` is a constant in each copy. */
#if defined(__GNUC__)
#define ALWAYS_INLINE inline __attribute__((always_inline))
#else
#define ALWAYS_INLINE inline
#endif

/* The packed array (native byte order) of a list or tuple of ints, as a
 * bytearray. */
static ALWAYS_INLINE PyObject *
pack(PyObject *const *args, Py_ssize_t nargs, const char *fname, int bits)
{
    if (nargs != 2) {
        PyErr_Format(PyExc_TypeError, "%s() takes 2 positional arguments (%zd given)", fname, nargs);
        return NULL;
    }
    PyObject *seq = args[0], *what = args[1];
    if (!PyList_CheckExact(seq) && !PyTuple_CheckExact(seq)) {
        PyErr_Format(PyExc_TypeError, "%s() argument 1 must be a list or a tuple, not %.200s", fname,
                     Py_TYPE(seq)->tp_name);
        return NULL;
    }
    if (!PyUnicode_Check(what)) {
        PyErr_Format(PyExc_TypeError, "%s() argument 2 must be str, not %.200s", fname, Py_TYPE(what)->tp_name);
        return NULL;
    }
    const uint64_t max = bits == 32 ? UINT32_MAX : UINT64_MAX;
    const Py_ssize_t n = PySequence_Fast_GET_SIZE(seq);
    /* n * 8 cannot overflow: a list of n items already holds n pointers. */
    PyObject *out = PyByteArray_FromStringAndSize(NULL, n * (bits / 8));
    if (out == NULL)
        return NULL;
    char *buf = PyByteArray_AS_STRING(out);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = items[i];
        uint64_t x;
        /* Exact ints first: one pointer comparison, no load of the type's
         * flags. */
        if (Py_IS_TYPE(item, &PyLong_Type) || PyLong_Check(item)) {
            int ok = read_int(item, max, &x);
            if (ok <= 0) {
                if (ok == 0)
                    range_error(what, i, item, bits);
                goto fail;
            }
        } else {
            if (read_index(seq, n, what, i, item, max, bits, &x) < 0)
                goto fail;
            /* __index__ may have reallocated the list's item array. */
            items = PySequence_Fast_ITEMS(seq);
        }
        if (bits == 32) {
            uint32_t y = (uint32_t)x;
            memcpy(buf + (size_t)i * 4, &y, 4);
        } else {
            memcpy(buf + (size_t)i * 8, &x, 8);
        }
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

PyDoc_STRVAR(pack_u32_doc,
             "pack_u32(values, what, /) -> bytearray\n\n"
             "The list or tuple of ints `values` as packed native uint32 values. `what`\n"
             "names the argument in errors: TypeError for an item that is not an int\n"
             "(nor has __index__), OverflowError for one outside [0, 2**32).");

static PyObject *
pack_u32(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    return pack(args, nargs, "pack_u32", 32);
}

PyDoc_STRVAR(pack_u64_doc,
             "pack_u64(values, what, /) -> bytearray\n\n"
             "As pack_u32, for uint64 values in [0, 2**64).");

static PyObject *
pack_u64(PyObject *module, PyObject *const *args, Py_ssize_t nargs)
{
    (void)module;
    return pack(args, nargs, "pack_u64", 64);
}

/* Whether a buffer format names a native uint64 ('Q', or 'L' where long is
 * 64-bit; the caller checks the item size). */
static int
is_u64_format(const char *fmt)
{
#if PY_LITTLE_ENDIAN
    const char *native = "@=<";
#else
    const char *native = "@=>!";
#endif
    if (fmt == NULL)
        return 0;
    if (*fmt != '\0' && strchr(native, *fmt) != NULL)
        fmt++;
    return (fmt[0] == 'Q' || (fmt[0] == 'L' && sizeof(long) == 8)) && fmt[1] == '\0';
}

PyDoc_STRVAR(u64_list_doc,
             "u64_list(buffer, /) -> list[int]\n\n"
             "A 1-D C-contiguous buffer of native uint64 values (array('Q'), numpy\n"
             "uint64) as a list of ints, like array.tolist.");

static PyObject *
u64_list(PyObject *module, PyObject *obj)
{
    (void)module;
    Py_buffer view;
    if (PyObject_GetBuffer(obj, &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0)
        return NULL;
    if (view.itemsize != 8 || view.ndim != 1 || !is_u64_format(view.format)) {
        PyErr_Format(PyExc_TypeError, "u64_list() needs a 1-D buffer of unsigned 64-bit integers, got format %s",
                     view.format == NULL ? "(none)" : view.format);
        PyBuffer_Release(&view);
        return NULL;
    }
    const Py_ssize_t n = view.len / 8;
    PyObject *list = PyList_New(n);
    if (list != NULL) {
        const char *p = view.buf;
        for (Py_ssize_t i = 0; i < n; i++) {
            uint64_t x;
            /* memcpy: any exporter's buffer, aligned or not. */
            memcpy(&x, p + (size_t)i * 8, 8);
            PyObject *item = PyLong_FromUnsignedLongLong(x);
            if (item == NULL) {
                /* The unfilled slots are NULL, which list_dealloc skips. */
                Py_CLEAR(list);
                break;
            }
            PyList_SET_ITEM(list, i, item);
        }
    }
    PyBuffer_Release(&view);
    return list;
}

static PyMethodDef methods[] = {
    {"pack_u32", (PyCFunction)(void (*)(void))pack_u32, METH_FASTCALL, pack_u32_doc},
    {"pack_u64", (PyCFunction)(void (*)(void))pack_u64, METH_FASTCALL, pack_u64_doc},
    {"u64_list", u64_list, METH_O, u64_list_doc},
    {NULL, NULL, 0, NULL},
};

/* The module keeps no state, so it is safe in every subinterpreter. It does
 * not declare free-threading support (Py_mod_gil): on a free-threaded build
 * the interpreter keeps the GIL on while it is imported, because another
 * thread could resize a list while it is being read. */
static PyModuleDef_Slot slots[] = {
#if PY_VERSION_HEX >= 0x030C0000
    {Py_mod_multiple_interpreters, Py_MOD_PER_INTERPRETER_GIL_SUPPORTED},
#endif
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "kvhash._speedups",
    .m_doc = "Python ints to and from packed C arrays for kvhash's list API (conversion only).",
    .m_size = 0,
    .m_methods = methods,
    .m_slots = slots,
};

PyMODINIT_FUNC
PyInit__speedups(void)
{
    return PyModuleDef_Init(&module_def);
}
