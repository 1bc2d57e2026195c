#!/usr/bin/env python3
"""NumPy interop for tests/test_npy.c (standard library + numpy).

  numpy_interop.py make DIR    writes .npy files with numpy.save and .npz files with numpy.savez
                               and numpy.savez_compressed, values from value() below
  numpy_interop.py check DIR   loads the files tensor.h wrote (out_*.npy, out.npz) with numpy.load and
                               compares them exactly with the same formula; exits non-zero on mismatch

The C side computes the same formula (test_npy.c: npy_formula)."""
import io
import os
import sys
import zipfile

import numpy as np


def value(kind, i):
    """Element i (row-major) of an array of dtype kind: exact in every dtype used."""
    if kind == 'b1':
        return i % 3 == 1
    if kind == 'u1':
        return (i * 37 + 11) % 256
    if kind == 'i4':
        return (i * 7919) % 2001 - 1000
    if kind == 'i8':
        return ((i * 7919) % 2001 - 1000) * 3000000007
    return ((i * 7) % 23 - 11) * 0.25  # f2, f4, f8


def array(kind, shape):
    n = int(np.prod(shape, dtype=np.int64))
    dt = {'b1': np.bool_, 'u1': np.uint8, 'i4': np.int32, 'i8': np.int64,
          'f2': np.float16, 'f4': np.float32, 'f8': np.float64}[kind]
    return np.array([value(kind, i) for i in range(n)], dtype=dt).reshape(shape)


# name, kind, shape: what `make` writes (test_npy.c has the same table)
NPY = [
    ('f4', 'f4', (3, 4)), ('f8', 'f8', (2, 3, 4)), ('f2', 'f2', (5,)), ('i4', 'i4', (2, 5)),
    ('i8', 'i8', (4,)), ('u1', 'u1', (3, 3)), ('b1', 'b1', (7,)), ('scalar', 'f8', ()),
    ('empty', 'f4', (0, 3)), ('fortran', 'f4', (3, 4, 2)), ('be_f8', 'f8', (2, 3)), ('be_i4', 'i4', (5,)),
]
NPZ = [('a', 'f4', (2, 3)), ('b', 'i8', (4,)), ('c', 'b1', (3,)), ('d', 'f8', ())]
# what test_npy.c writes: out_NAME.npy for each of these, out.npz with all of them
OUT = [('f4', 'f4', (3, 4)), ('f8', 'f8', (2, 3, 4)), ('f2', 'f2', (5,)), ('i4', 'i4', (2, 5)),
       ('i8', 'i8', (4,)), ('u1', 'u1', (3, 3)), ('b1', 'b1', (7,)), ('scalar', 'f8', ()),
       ('empty', 'f4', (0, 3)), ('eight', 'f4', (1, 2, 1, 1, 3, 1, 1, 2))]


def make(d):
    for name, kind, shape in NPY:
        a = array(kind, shape)
        if name == 'fortran':
            a = np.asfortranarray(a)
        elif name.startswith('be_'):
            a = a.astype(a.dtype.newbyteorder('>'))
        np.save(os.path.join(d, name + '.npy'), a)
    arrays = {name: array(kind, shape) for name, kind, shape in NPZ}
    np.savez(os.path.join(d, 'plain.npz'), **arrays)
    np.savez_compressed(os.path.join(d, 'compressed.npz'), **arrays)


def same(name, got, want):
    if got.dtype != want.dtype or got.shape != want.shape or not np.array_equal(got, want):
        sys.exit('numpy_interop: %s: got %r %r %r, want %r %r %r' % (name, got.dtype, got.shape, got, want.dtype, want.shape, want))


def check(d):
    exact = tuple(int(x) for x in np.__version__.split('.')[:2]) >= (1, 23)  # the header's growth padding
    for name, kind, shape in OUT:
        path = os.path.join(d, 'out_%s.npy' % name)
        want = array(kind, shape)
        same(path, np.load(path), want)
        if exact:
            b = io.BytesIO()
            np.save(b, want)
            with open(path, 'rb') as f:
                if f.read() != b.getvalue():
                    sys.exit('numpy_interop: %s differs from the bytes numpy.save writes' % path)
    # a transposed source: out_t.npy holds array('f4', (4, 3)).T
    same('out_t.npy', np.load(os.path.join(d, 'out_t.npy')), array('f4', (4, 3)).T)
    path = os.path.join(d, 'out.npz')
    with zipfile.ZipFile(path) as z:
        bad = z.testzip()
        if bad is not None:
            sys.exit('numpy_interop: %s: bad CRC in member %s' % (path, bad))
    with np.load(path) as z:
        names = [name for name, _, _ in OUT]
        if list(z.files) != names:
            sys.exit('numpy_interop: %s: members %r, want %r' % (path, z.files, names))
        for name, kind, shape in OUT:
            same(path + ':' + name, z[name], array(kind, shape))
    print('numpy_interop: check passed')


if __name__ == '__main__':
    if len(sys.argv) != 3 or sys.argv[1] not in ('make', 'check'):
        sys.exit('usage: numpy_interop.py make|check DIR')
    (make if sys.argv[1] == 'make' else check)(sys.argv[2])
