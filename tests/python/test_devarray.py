"""Device arrays through the binding (Engine.push, DeviceArray): push and
pull give the bits back; every call takes them and gives its outputs on the
device, with the bits of the host call; a CPU implementation's moves show
in the report; arrays from other libraries come in through DLPack or the
array interface without a copy where their memory is the host's, and one
in a device's memory is copied once or refused with copy=False; freed
arrays and closed engines give clear errors. Skipped without an OpenCL
device."""

import numpy as np
import pytest

import quicksilver as qs


@pytest.fixture
def cl_engine():
    with qs.Engine(db=":memory:", seed=1, calibration=False) as e:
        devs = [d for d in e.devices() if d.name != "cpu"]
        if not devs:
            pytest.skip("no OpenCL device: " + e.opencl_why)
        yield e, devs[0].name


def test_push_pull_shape_dtype(cl_engine, stack):
    e, dev = cl_engine
    d = e.push(stack, dev)
    assert isinstance(d, qs.DeviceArray)
    assert d.shape == stack.shape and d.dtype == np.float32
    assert d.device == dev
    assert np.array_equal(d.pull(), stack)
    assert np.array_equal(np.asarray(d), stack)
    assert np.asarray(d, dtype=np.float64).dtype == np.float64
    d.free()
    assert d.device == ""
    with pytest.raises(qs.Error):
        d.pull()


@pytest.mark.parametrize("impl", ["serial", "opencl"])
def test_calls_on_device_arrays_give_host_bits(cl_engine, stack, impl):
    e, dev = cl_engine
    impl = impl if impl == "serial" else "opencl:" + dev
    d = e.push(stack, dev)
    host = e.run("roberts_cross", stack, impl=impl)
    on = e.run("roberts_cross", d, impl=impl)
    for h, o in zip(host, on):
        assert isinstance(o, qs.DeviceArray) and o.device == dev
        assert np.array_equal(np.asarray(o), h)
    moved = stack.nbytes
    if impl == "serial":  # pulled once, pushed back once
        assert on.report.bytes_pulled == moved
        assert on.report.bytes_pushed == 2 * moved
    else:  # the buffers themselves
        assert on.report.bytes_up == 0 and on.report.bytes_down == 0
    # a chain stays on the device; a plan and an estimate take them too
    m = e.run("shift_magnify", on[0], impl=impl, magnification_row=2,
              magnification_col=2)
    assert isinstance(m[0], qs.DeviceArray) and m[0].shape[1] == 48
    with e.open("roberts_cross", stack.shape, impl=impl) as p:
        r = p.run(d)
        assert np.array_equal(np.asarray(r[0]), host[0])
    # the stream and the sweep read host memory: pulled once
    with e.esrrf_stream(stack.shape[1], stack.shape[2], window=4,
                        magnification=2) as st:
        st.push(d)
        assert st.frames == stack.shape[0]
    est = e.estimate("roberts_cross", d)
    priced = {x.impl: x.transfer_seconds for x in est.estimates}
    assert priced["serial"] > 0 and priced["opencl:" + dev] == 0


class Exporter:
    """Only DLPack (as torch and cupy export), over a numpy array."""

    def __init__(self, a, device=(1, 0)):
        self.a, self.device = a, device

    def __dlpack__(self, **kw):
        return self.a.__dlpack__(**kw)

    def __dlpack_device__(self):
        return self.device


class OnGpu(Exporter):
    """A CUDA-resident array as cupy's: DLPack device 2, .get() copies."""

    def __init__(self, a):
        super().__init__(a, (2, 0))
        self.copies = 0

    def get(self):
        self.copies += 1
        return self.a.copy()


class Interface:
    """Only the array interface (as many libraries' host arrays)."""

    def __init__(self, a):
        self.__array_interface__ = a.__array_interface__
        self.keep = a


def test_other_libraries_inputs(stack):
    with qs.Engine(db=":memory:", opencl=False, seed=1,
                   calibration=False) as e:
        ref = e.run("roberts_cross", stack, impl="serial")
        for x in (Exporter(stack), Interface(stack)):
            got = e.run("roberts_cross", x, impl="serial", copy=False)
            assert np.array_equal(got[0], ref[0])
        g = OnGpu(stack)
        got = e.run("roberts_cross", g, impl="serial")
        assert np.array_equal(got[0], ref[0]) and g.copies == 1
        with pytest.raises(qs.CopyError, match="DLPack device type 2"):
            e.run("roberts_cross", OnGpu(stack), copy=False)


def test_closed_engine_and_foreign_arrays(stack):
    with qs.Engine(db=":memory:", seed=1, calibration=False) as e:
        if not [d for d in e.devices() if d.name != "cpu"]:
            pytest.skip("no OpenCL device")
        d = e.push(stack)
        with qs.Engine(db=":memory:", seed=1, calibration=False) as f:
            with pytest.raises(qs.Error, match="another engine"):
                f.run("roberts_cross", d)
    # the engine is closed under d: it only answers free (and device "")
    assert d.device == ""
    with pytest.raises(qs.Error):
        d.pull()
    d.free()
