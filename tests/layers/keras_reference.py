# The Keras numbers of tower's attention-family tests (tests/layers/attention/test_attention.cpp,
# tests/layers/normalization/test_layer_normalization.cpp, tests/layers/merging/test_dot.cpp), printed as
# C++ literals: python tests/layers/keras_reference.py layer_norm|mha|attention|dot|configs [tfk]
# (run with Keras 3.15 and tf_keras 2.21 on TensorFlow 2.21; `configs` prints model.to_json() of a model
# whose attention calls pass keyword arguments, with tf_keras when given tfk).
# Inputs, weights and loss coefficients are sin sequences that the C++ tests rebuild with the same formula:
# seq(shape, a, b, s)[i] = float32(s * sin(a * i + b)), i over the flattened (row-major) shape.
# Gradients: d/d(.) of sum(output * seq(output.shape, 0.45, 0.2)).
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "3"
import numpy as np
import tensorflow as tf
if sys.argv[1:] == ["configs", "tfk"]:
    import tf_keras as keras
else:
    import keras
    from keras.src import backend

def seq(shape, a, b, s=1.0):
    n = int(np.prod(shape)) if len(shape) else 1
    return (s * np.sin(a * np.arange(n, dtype=np.float64) + b)).reshape(shape).astype(np.float32)

def lit(name, t):
    v = np.asarray(t, dtype=np.float64).ravel()
    print(f"  // {name} {tuple(np.shape(t))}")
    print("  const std::vector<double> " + name + "{" + ", ".join(f"{x:.8g}" for x in v) + "};")

def grads(fn, tensors):
    ts = [tf.Variable(t) if isinstance(t, np.ndarray) else t for t in tensors]
    with tf.GradientTape() as tape:
        out = fn([tf.convert_to_tensor(t) if isinstance(t, tf.Variable) else t for t in ts])
        y = out[0] if isinstance(out, (list, tuple)) else out
        loss = tf.reduce_sum(y * seq(tuple(y.shape), 0.45, 0.2))
    return out, tape.gradient(loss, ts)

case = sys.argv[1]
if case == "layer_norm":
    print("// LayerNormalization: x seq((2,3,4),0.7,0.1,2), gamma 1+0.5*seq((4,),0.9,0.3), beta seq((4,),1.1,0.5,0.1)")
    x = seq((2, 3, 4), 0.7, 0.1, 2.0)
    ln = keras.layers.LayerNormalization()
    ln.build(x.shape)
    ln.set_weights([1 + seq((4,), 0.9, 0.3, 0.5), seq((4,), 1.1, 0.5, 0.1)])
    xv = tf.Variable(x)
    with tf.GradientTape() as tape:
        y = ln(xv)
        loss = tf.reduce_sum(y * seq(y.shape, 0.45, 0.2))
    g = tape.gradient(loss, [xv] + ln.trainable_weights)
    lit("ln_y", y); lit("ln_dx", g[0]); lit("ln_dgamma", g[1]); lit("ln_dbeta", g[2])
    print("// LayerNormalization(axis=[1, 2], epsilon=0.01, center=False): gamma 1+0.5*seq((3,4),0.9,0.3)")
    ln2 = keras.layers.LayerNormalization(axis=[1, 2], epsilon=0.01, center=False)
    ln2.build(x.shape)
    ln2.set_weights([1 + seq((3, 4), 0.9, 0.3, 0.5)])
    with tf.GradientTape() as tape:
        y = ln2(xv)
        loss = tf.reduce_sum(y * seq(y.shape, 0.45, 0.2))
    g = tape.gradient(loss, [xv] + ln2.trainable_weights)
    lit("ln2_y", y); lit("ln2_dx", g[0]); lit("ln2_dgamma", g[1])

def set_mha_weights(mha):
    ws = []
    for i, w in enumerate(mha.weights):
        ws.append(seq(tuple(w.shape), 0.3 + 0.1 * i, 0.2 * i, 0.5))
    mha.set_weights(ws)

if case == "mha":
    # query (2,3,4), value (2,4,5), key (2,4,3); MHA(2 heads, key_dim 3, value_dim 2); attention_mask with
    # batch 1's last query row fully masked.
    print("// MHA(num_heads=2, key_dim=3, value_dim=2): query seq((2,3,4),0.5,0.1), value seq((2,4,5),0.6,0.7),")
    print("// key seq((2,4,3),0.8,1.3); weight i (Keras order) = seq(shape, 0.3 + 0.1 i, 0.2 i, 0.5)")
    q = seq((2, 3, 4), 0.5, 0.1); v = seq((2, 4, 5), 0.6, 0.7); k = seq((2, 4, 3), 0.8, 1.3)
    mask = np.array([[[1, 1, 0, 1], [0, 1, 1, 1], [1, 0, 0, 0]],
                     [[1, 1, 1, 1], [1, 0, 1, 0], [0, 0, 0, 0]]], dtype=np.float32)
    mha = keras.layers.MultiHeadAttention(2, 3, value_dim=2)
    mha(q, v, key=k)
    set_mha_weights(mha)
    print("  //", [(w.path, tuple(w.shape)) for w in mha.weights])
    out, g = grads(lambda t: mha(t[0], t[1], key=t[2], attention_mask=mask), [q, v, k] + list(mha.weights))
    lit("mha_y", out)
    for name, gg in zip(["dq", "dv", "dk"] + [w.path.replace("multi_head_attention/", "").replace("/", "_") for w in mha.weights], g):
        lit("mha_" + name, gg)
    y2, s2 = mha(q, v, key=k, attention_mask=mask, return_attention_scores=True)
    lit("mha_scores_y", y2); lit("mha_scores", s2)
    # The Keras-mask path: query/value masks through set_keras_mask (Keras's automatic masks) and causal.
    print("// self-attention MHA(num_heads=2, key_dim=2) on x seq((2,4,3),0.9,0.4) with use_causal_mask and")
    print("// the Keras mask [[1,1,1,0],[1,1,0,0]] on x (query and value); weights as above")
    x = seq((2, 4, 3), 0.9, 0.4)
    mha2 = keras.layers.MultiHeadAttention(2, 2)
    mha2(x, x)
    set_mha_weights(mha2)
    xm = np.array([[1, 1, 1, 0], [1, 1, 0, 0]], dtype=bool)
    xt = tf.Variable(x)
    with tf.GradientTape() as tape:
        xx = tf.identity(xt)
        backend.set_keras_mask(xx, tf.constant(xm))
        y = mha2(xx, xx, use_causal_mask=True)
        loss = tf.reduce_sum(y * seq(y.shape, 0.45, 0.2))
    gx = tape.gradient(loss, xt)
    lit("causal_y", y); lit("causal_dx", gx)
    print("  // output mask:", backend.get_keras_mask(y).numpy().astype(int).tolist())
    # the same as an explicit mask: q_mask[:, :, None] & v_mask[:, None, :] & causal
    am = xm[:, :, None] & xm[:, None, :] & np.tril(np.ones((4, 4), bool))[None]
    y3 = mha2(x, x, attention_mask=am)
    print("  // explicit-mask max difference:", float(np.abs(y3 - y).max()))
    backend.set_keras_mask(xx, tf.constant(xm))  # MHA's call removed it from its inputs
    y4, s4 = mha2(xx, xx, use_causal_mask=True, return_attention_scores=True)
    lit("causal_scores_y", y4)
    lit("causal_scores", s4)

if case == "attention":
    q = seq((2, 3, 4), 0.5, 0.1); v = seq((2, 4, 4), 0.6, 0.7); k = seq((2, 4, 4), 0.8, 1.3)
    qm = np.array([[1, 1, 0], [1, 1, 1]], bool); vm = np.array([[1, 0, 1, 1], [1, 1, 1, 0]], bool)
    print("// Attention(use_scale=True) dot, scale = 0.7: query seq((2,3,4),0.5,0.1), value seq((2,4,4),0.6,0.7),")
    print("// key seq((2,4,4),0.8,1.3), mask=[[[1,1,0],[1,1,1]], [[1,0,1,1],[1,1,1,0]]]")
    att = keras.layers.Attention(use_scale=True)
    att([q, v, k]); att.set_weights([np.array(0.7, np.float32)])
    out, g = grads(lambda t: att([t[0], t[1], t[2]], mask=[qm, vm], return_attention_scores=True), [q, v, k] + att.weights)
    lit("dot_y", out[0]); lit("dot_scores", out[1]); lit("dot_dq", g[0]); lit("dot_dv", g[1]); lit("dot_dk", g[2]); lit("dot_dscale", g[3])
    print("// Attention(use_scale=True, score_mode='concat'), scale 0.8, concat_score_weight 1.3, [query, value],")
    print("// use_causal_mask, value mask only")
    att2 = keras.layers.Attention(use_scale=True, score_mode="concat")
    att2([q, v]); att2.set_weights([np.array(0.8, np.float32), np.array(1.3, np.float32)])
    out, g = grads(lambda t: att2([t[0], t[1]], mask=[None, vm], use_causal_mask=True, return_attention_scores=True), [q, v] + att2.weights)
    lit("concat_y", out[0]); lit("concat_scores", out[1]); lit("concat_dq", g[0]); lit("concat_dv", g[1]); lit("concat_dscale", g[2]); lit("concat_dweight", g[3])
    print("// AdditiveAttention(), scale seq((4,),0.9,0.3): [query, value, key], query and value masks")
    ad = keras.layers.AdditiveAttention()
    ad([q, v, k]); ad.set_weights([seq((4,), 0.9, 0.3)])
    out, g = grads(lambda t: ad([t[0], t[1], t[2]], mask=[qm, vm], return_attention_scores=True), [q, v, k] + ad.weights)
    lit("add_y", out[0]); lit("add_scores", out[1]); lit("add_dq", g[0]); lit("add_dv", g[1]); lit("add_dk", g[2]); lit("add_dscale", g[3])
    print("// AdditiveAttention(use_scale=False), [query, value], use_causal_mask")
    ad2 = keras.layers.AdditiveAttention(use_scale=False)
    y = ad2([q, v], use_causal_mask=True)
    lit("add_causal_y", y)

if case == "dot":
    for name, axes, norm, sx, sy in [("dot1", 1, False, (2, 5), (2, 5)), ("dot1n", 1, True, (2, 5), (2, 5)),
                                     ("dot12n", (1, 2), True, (2, 3, 5), (2, 4, 3)),
                                     ("dotm1", -1, False, (2, 3, 4), (2, 5, 4)),
                                     ("dot23", (1, 2), False, (2, 4), (2, 3, 4))]:
        print(f"// Dot(axes={axes}, normalize={norm}): x seq({sx},0.5,0.1), y seq({sy},0.6,0.7)")
        d = keras.layers.Dot(axes=axes, normalize=norm)
        out, g = grads(lambda t: d([t[0], t[1]]), [seq(sx, 0.5, 0.1), seq(sy, 0.6, 0.7)])
        print("  // output shape", tuple(out.shape))
        lit(name + "_y", out); lit(name + "_dx", g[0]); lit(name + "_dy", g[1])

if case == "configs":
    q = keras.Input((4, 6), name="q"); v = keras.Input((5, 6), name="v"); m = keras.Input((4, 5), name="m")
    mha = keras.layers.MultiHeadAttention(2, 3, name="mha")
    y, s = mha(q, v, key=v, attention_mask=m, use_causal_mask=True, return_attention_scores=True)
    y2 = mha(q, v)
    z = keras.layers.Attention(name="att")([q, v], use_causal_mask=True)
    print(keras.Model([q, v, m], [y, s, y2, z], name="calls").to_json())
