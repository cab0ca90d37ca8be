#!/usr/bin/python3
"""Regenerates the seed corpus (committed; run by hand when it changes).
ok_* files are valid, bad_* files each break one rule the readers check."""
import json, os, struct, io
import numpy as np
from numpy.lib import format as F

here = os.path.dirname(os.path.abspath(__file__))
st_dir = os.path.join(here, 'corpus', 'safetensors')
npy_dir = os.path.join(here, 'corpus', 'npy')

def st(name, header, data, raw_header=None):
    h = raw_header if raw_header is not None else json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    open(os.path.join(st_dir, name), 'wb').write(struct.pack('<Q', len(h)) + h + data)

a = np.arange(6, dtype='<f4').tobytes()
b = np.array([1, -2], dtype='<i8').tobytes()
good = {'__metadata__': {'format': 'pt'},
        'w': {'dtype': 'F32', 'shape': [2, 3], 'data_offsets': [0, 24]},
        'b': {'dtype': 'I64', 'shape': [2], 'data_offsets': [24, 40]}}
st('ok_two.safetensors', good, a + b)
st('ok_empty.safetensors', {}, b'')
st('ok_scalar_bf16.safetensors', {'s': {'dtype': 'BF16', 'shape': [], 'data_offsets': [0, 2]},
                                  'z': {'dtype': 'F16', 'shape': [0], 'data_offsets': [2, 2]}}, b'\x80\x3f')
st('bad_hole.safetensors', {'w': {'dtype': 'F32', 'shape': [2], 'data_offsets': [0, 8]},
                            'b': {'dtype': 'F32', 'shape': [2], 'data_offsets': [12, 20]}}, bytes(20))
st('bad_overlap.safetensors', {'w': {'dtype': 'F32', 'shape': [2], 'data_offsets': [0, 8]},
                               'b': {'dtype': 'F32', 'shape': [2], 'data_offsets': [4, 12]}}, bytes(12))
st('bad_outside.safetensors', {'w': {'dtype': 'F32', 'shape': [4], 'data_offsets': [0, 16]}}, bytes(8))
st('bad_dtype.safetensors', {'w': {'dtype': 'C64', 'shape': [1], 'data_offsets': [0, 8]}}, bytes(8))
st('bad_json.safetensors', None, bytes(8), raw_header=b'{"w":{"dtype":"F32","shape":[2,}}')
st('bad_size.safetensors', {'w': {'dtype': 'F64', 'shape': [2], 'data_offsets': [0, 8]}}, bytes(8))
open(os.path.join(st_dir, 'bad_hdrlen.safetensors'), 'wb').write(struct.pack('<Q', 100000001) + b'{}')
open(os.path.join(st_dir, 'bad_short.safetensors'), 'wb').write(b'\x10\x00\x00')

def npy(name, arr, version=(1, 0)):
    f = io.BytesIO()
    F.write_array(f, arr, version=version)
    open(os.path.join(npy_dir, name), 'wb').write(f.getvalue())

x = np.arange(12, dtype='<f4').reshape(3, 4)
npy('ok_v1.npy', x)
npy('ok_v2.npy', np.array([True, False]), version=(2, 0))
npy('ok_fortran.npy', np.asfortranarray(x.astype('<f8')))
npy('ok_scalar.npy', np.array(7, dtype='<i4'))
good_npy = open(os.path.join(npy_dir, 'ok_v1.npy'), 'rb').read()
open(os.path.join(npy_dir, 'bad_truncated.npy'), 'wb').write(good_npy[:-5])
open(os.path.join(npy_dir, 'bad_magic.npy'), 'wb').write(b'\x93NUMPZ' + good_npy[6:])
hdr = b"{'descr': '>f4', 'fortran_order': False, 'shape': (3, 4), }"
hdr += b' ' * (64 - (10 + len(hdr) + 1) % 64) + b'\n'
open(os.path.join(npy_dir, 'bad_bigendian.npy'), 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr + bytes(48))
open(os.path.join(npy_dir, 'bad_hdrcap.npy'), 'wb').write(b'\x93NUMPY\x02\x00' + struct.pack('<I', 10001) + b'{' + b' ' * 10000)
open(os.path.join(npy_dir, 'bad_version.npy'), 'wb').write(b'\x93NUMPY\x05\x00' + good_npy[8:])
hdr = b"{'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), 'extra': 1}\n"
open(os.path.join(npy_dir, 'bad_key.npy'), 'wb').write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(hdr)) + hdr + bytes(48))
open(os.path.join(npy_dir, 'bad_trailing.npy'), 'wb').write(good_npy + b'xx')
