#include "parsers/python/pyunpickler.h"

#include "parsers/pickle/opcodes.h"

#include <pybind11/embed.h>

#include <mutex>
#include <unordered_map>

namespace py = pybind11;

namespace oomlens::python {

using pickle::DecodeError;
using pickle::ErrorKind;
using pickle::Kind;
using pickle::Value;

namespace {

// find_class is the only door CPython's unpickler has to code (GLOBAL, STACK_GLOBAL, INST, OBJ and
// the EXT codes all go through it; REDUCE/BUILD/NEWOBJ need a callable that only it can supply).
constexpr const char* restrictedSource = R"(
import io, pickle

class RestrictedUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(
            "refusing to run code from the snapshot: global %s.%s" % (module, name))

    def persistent_load(self, pid):
        raise pickle.UnpicklingError("refusing to run code from the snapshot: persistent id")

def load(data):
    # BufferedReader gives the C unpickler peek(), so it prefetches instead of calling read()
    # for every opcode of an unframed protocol-2 pickle.
    stream = io.BufferedReader(io.BytesIO(data), buffer_size=1 << 20)
    return RestrictedUnpickler(stream, encoding="latin1").load()
)";

// The walk recurses twice per level. Snapshots nest about six deep; 1000 levels keep the walk
// inside a worker thread's stack even in sanitizer builds (10000 overflowed 8 MiB under ASan).
constexpr int maxDepth = 1000;

std::once_flag initOnce;
std::string initError;
// Deliberately leaked: releasing a Python object at process exit would need the GIL.
py::object* loadFunction = nullptr;

void setUp()
{
    py::dict scope;
    py::exec(restrictedSource, scope);
    loadFunction = new py::object(scope["load"]);
}

// PyGILState_Ensure/Release rather than pybind11's gil_scoped_acquire: they are the C API meant
// for threads Python did not create, and survive the initialising thread having exited.
class GilHolder
{
public:
    GilHolder()
        : m_state(PyGILState_Ensure())
    { }
    ~GilHolder() { PyGILState_Release(m_state); }
    GilHolder(const GilHolder&) = delete;
    GilHolder& operator=(const GilHolder&) = delete;

private:
    PyGILState_STATE m_state;
};

void initialise()
{
    std::call_once(initOnce, [] {
        try {
            if (!Py_IsInitialized()) {
                // No signal handlers: the host application owns SIGINT. The interpreter is never
                // finalized; it lives as long as the process.
                py::initialize_interpreter(false, 0, nullptr, false);
                setUp();
                // Release the GIL taken by initialisation so any thread (a loader worker) can take it.
                PyEval_SaveThread();
            } else {
                GilHolder gil;
                setUp();
            }
        } catch (const std::exception& e) {
            initError = std::string("the embedded Python interpreter could not start: ") + e.what();
        }
    });
}

// Takes the pending Python exception and turns it into one error line.
DecodeError pendingError()
{
    PyObject* type = nullptr;
    PyObject* value = nullptr;
    PyObject* traceback = nullptr;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    std::string message;
    if (value) {
        if (PyObject* text = PyObject_Str(value)) {
            if (const char* utf8 = PyUnicode_AsUTF8(text))
                message = utf8;
            Py_DECREF(text);
        }
    }
    PyErr_Clear();
    const std::string typeName = type ? reinterpret_cast<PyTypeObject*>(type)->tp_name : "error";
    Py_XDECREF(type);
    Py_XDECREF(value);
    Py_XDECREF(traceback);
    if (message.find("refusing to run code") != std::string::npos)
        return DecodeError(ErrorKind::Safety, message);
    return DecodeError(ErrorKind::Format, "Python unpickler: " + typeName + ": " + message);
}

class Walker
{
public:
    Walker(pickle::ValueBuilder& builder, const std::atomic_bool* cancel)
        : m_builder(builder)
        , m_cancel(cancel)
    { }

    Value walk(PyObject* o, int depth)
    {
        if (o == Py_None)
            return Value::none();
        if (PyBool_Check(o))
            return Value::boolean(o == Py_True);
        if (PyLong_Check(o)) {
            int overflow = 0;
            const long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
            if (overflow > 0) {
                // Up to 2^64-1 keeps its bit pattern, as in the native decoder.
                const unsigned long long u = PyLong_AsUnsignedLongLong(o);
                if (u == static_cast<unsigned long long>(-1) && PyErr_Occurred()) {
                    PyErr_Clear();
                    return Value::bigInteger();
                }
                return Value::integer(static_cast<int64_t>(u));
            }
            if (overflow < 0)
                return Value::bigInteger();
            return Value::integer(v);
        }
        if (PyFloat_Check(o))
            return Value::real(PyFloat_AS_DOUBLE(o));
        if (PyUnicode_Check(o)) {
            Py_ssize_t n = 0;
            const char* s = PyUnicode_AsUTF8AndSize(o, &n);
            if (!s) {
                PyErr_Clear();
                throw DecodeError(ErrorKind::Format, "a string in the snapshot is not valid Unicode");
            }
            return m_builder.text(std::string_view(s, static_cast<size_t>(n)));
        }
        if (PyBytes_Check(o))
            return m_builder.bytes(std::string_view(PyBytes_AS_STRING(o), static_cast<size_t>(PyBytes_GET_SIZE(o))));
        if (PyByteArray_Check(o))
            return m_builder.bytes(
                std::string_view(PyByteArray_AS_STRING(o), static_cast<size_t>(PyByteArray_GET_SIZE(o))));
        return container(o, depth);
    }

private:
    Value container(PyObject* o, int depth)
    {
        if (depth >= maxDepth)
            throw DecodeError(ErrorKind::Format, "nesting deeper than " + std::to_string(maxDepth) + " levels");
        if ((++m_visited & 0xfff) == 0 && m_cancel && m_cancel->load(std::memory_order_relaxed))
            throw DecodeError(ErrorKind::Cancelled, "cancelled");
        // Only an object referenced from more than one place can be met twice; the unpickler's
        // memo is gone by now, so the reference count tells exactly that.
        const bool shared = Py_REFCNT(o) > 1;
        if (shared) {
            const auto it = m_seen.find(o);
            if (it != m_seen.end()) {
                if (it->second.kind == Kind::Open)
                    throw DecodeError(ErrorKind::Unsupported, "a container that contains itself");
                return m_builder.again(it->second);
            }
            m_seen.emplace(o, Value::of(Kind::Open, 0));
        }
        Value result;
        if (PyDict_Check(o)) {
            const uint32_t handle = m_builder.open(Kind::Dict);
            Py_ssize_t pos = 0;
            PyObject* key = nullptr;
            PyObject* value = nullptr;
            while (PyDict_Next(o, &pos, &key, &value)) {
                const Value k = walk(key, depth + 1);
                m_builder.setItem(handle, k, walk(value, depth + 1));
            }
            result = m_builder.close(handle);
        } else if (PyList_Check(o) || PyTuple_Check(o)) {
            const bool isList = PyList_Check(o);
            const uint32_t handle = m_builder.open(isList ? Kind::List : Kind::Tuple);
            const Py_ssize_t n = isList ? PyList_GET_SIZE(o) : PyTuple_GET_SIZE(o);
            for (Py_ssize_t i = 0; i < n; ++i)
                m_builder.append(handle, walk(isList ? PyList_GET_ITEM(o, i) : PyTuple_GET_ITEM(o, i), depth + 1));
            result = m_builder.close(handle);
        } else if (PyAnySet_Check(o)) {
            const uint32_t handle = m_builder.open(Kind::Set);
            const auto it = py::reinterpret_steal<py::object>(PyObject_GetIter(o));
            while (it) {
                const auto item = py::reinterpret_steal<py::object>(PyIter_Next(it.ptr()));
                if (!item)
                    break;
                m_builder.append(handle, walk(item.ptr(), depth + 1));
            }
            PyErr_Clear();
            result = m_builder.close(handle);
        } else {
            throw DecodeError(ErrorKind::Format, std::string("unexpected Python type ") + Py_TYPE(o)->tp_name);
        }
        if (shared)
            m_seen[o] = result;
        return result;
    }

    pickle::ValueBuilder& m_builder;
    const std::atomic_bool* m_cancel;
    std::unordered_map<PyObject*, Value> m_seen;
    uint64_t m_visited = 0;
};

} // namespace

bool pythonAvailable(std::string* why)
{
    initialise();
    if (why)
        *why = initError;
    return loadFunction != nullptr;
}

Value pythonUnpickle(std::string_view data, pickle::ValueBuilder& builder, const PythonUnpickleOptions& options)
{
    if (data.empty())
        throw DecodeError(ErrorKind::Format, "empty input: no pickle data");
    if (options.prescan)
        pickle::scanOpcodes(data);
    initialise();
    if (!loadFunction)
        throw DecodeError(ErrorKind::Unsupported, initError);

    GilHolder gil;
    // The raw C API here, not pybind11's call operator: its error_already_set takes the GIL
    // again in its destructor through pybind11's own thread-state bookkeeping, which does not
    // know about threads that entered through PyGILState_Ensure.
    PyObject* view
        = PyMemoryView_FromMemory(const_cast<char*>(data.data()), static_cast<Py_ssize_t>(data.size()), PyBUF_READ);
    PyObject* result = view ? PyObject_CallOneArg(loadFunction->ptr(), view) : nullptr;
    Py_XDECREF(view);
    if (!result)
        throw pendingError();
    const py::object root = py::reinterpret_steal<py::object>(result);
    Walker walker(builder, options.cancel);
    return walker.walk(root.ptr(), 0);
}

} // namespace oomlens::python
