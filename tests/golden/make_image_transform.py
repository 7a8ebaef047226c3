#!/usr/bin/env python3
"""Writes files/image_transform.h5: TF's ImageProjectiveTransformV3 (what keras.ops.image.affine_transform
calls on the TF backend) for every fill mode and interpolation, read by tests/backends/test_image_ops.cpp.

    TF_CPP_MIN_LOG_LEVEL=3 python tests/golden/make_image_transform.py   (Keras 3.15.1, TF 2.21)

/images (2, 5, 6, 2) float32.
/case{k}/transforms (2, 8) and /case{k}/output_size (2,) int64; /case{k}/{interpolation}_{fill_mode} the
output (2, out_h, out_w, 2) with fill_value 0.5. Case 0: rotations about the centre (Keras's
RandomRotation matrices); case 1: zoom and translation reaching far outside the image (several folds of
reflect and wrap); case 2: projective (a6, a7 nonzero) into another output size; case 3: the output of
keras.ops.image.affine_transform itself for case 0's transforms (bilinear, reflect), as a cross-check.
"""
import math
import os

import h5py
import keras
import numpy as np
import tensorflow as tf

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "files")


def rotation(angle, h, w):
    cx, cy = 0.5 * (w - 1), 0.5 * (h - 1)
    c, s = math.cos(angle), math.sin(angle)
    return [c, -s, cx - cx * c + cy * s, s, c, cy - cx * s - cy * c, 0, 0]


def main():
    rng = np.random.default_rng(7)
    images = rng.uniform(-1.0, 2.0, size=(2, 5, 6, 2)).astype(np.float32)
    cases = [
        (np.array([rotation(0.7, 5, 6), rotation(-2.1, 5, 6)], np.float32), (5, 6)),
        (np.array([[1.7, 0.1, -9.3, -0.2, 2.3, 7.6, 0, 0], [-1.4, 0.0, 13.2, 0.3, -2.6, -11.1, 0, 0]], np.float32),
         (5, 6)),
        (np.array([[0.9, 0.2, 0.4, -0.1, 1.1, -0.6, 0.05, -0.08], [1.2, -0.3, 1.5, 0.25, 0.8, 0.7, -0.04, 0.06]],
                  np.float32), (4, 7)),
    ]
    with h5py.File(os.path.join(HERE, "image_transform.h5"), "w") as f:
        f["images"] = images
        for k, (transforms, size) in enumerate(cases):
            g = f.create_group(f"case{k}")
            g["transforms"] = transforms
            g["output_size"] = np.array(size, np.int64)
            for interpolation in ("nearest", "bilinear"):
                for mode in ("reflect", "wrap", "constant", "nearest"):
                    out = tf.raw_ops.ImageProjectiveTransformV3(
                        images=images, transforms=transforms, output_shape=np.array(size, np.int32),
                        fill_value=0.5, interpolation=interpolation.upper(), fill_mode=mode.upper())
                    g[f"{interpolation}_{mode}"] = out.numpy()
        g = f.create_group("case3")
        g["transforms"] = cases[0][0]
        g["output_size"] = np.array((5, 6), np.int64)
        g["bilinear_reflect"] = keras.ops.convert_to_numpy(keras.ops.image.affine_transform(
            images, cases[0][0], interpolation="bilinear", fill_mode="reflect", fill_value=0.5))


if __name__ == "__main__":
    main()
