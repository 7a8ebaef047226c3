"""bench_text's models in tf.keras (Keras 3 on TensorFlow, CPU): keras.io's "Text classification with
Transformer" classifier (token and position embeddings, one transformer block, average pooling) or the
Conv1D classifier, on (batch, 200) token ids of a 20,000-word vocabulary, sparse categorical
crossentropy, Adam, batch 32, random tokens."""
import argparse
import os
import resource
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
p = argparse.ArgumentParser()
p.add_argument("--model", default="transformer")
p.add_argument("--batch-size", type=int, default=32)
p.add_argument("--samples", type=int, default=8192)
p.add_argument("--epochs", type=int, default=1)
p.add_argument("--threads", type=int, default=2)
args = p.parse_args()

import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402
import keras  # noqa: E402
from keras import layers, ops  # noqa: E402

tf.config.threading.set_intra_op_parallelism_threads(args.threads)
tf.config.threading.set_inter_op_parallelism_threads(args.threads)
keras.utils.set_random_seed(1)
maxlen, vocab_size, embed_dim, num_heads, ff_dim = 200, 20000, 32, 2, 32


class TransformerBlock(layers.Layer):  # keras.io's, unchanged
    def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
        super().__init__()
        self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
        self.ffn = keras.Sequential([layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
        self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
        self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
        self.dropout1 = layers.Dropout(rate)
        self.dropout2 = layers.Dropout(rate)

    def call(self, inputs):
        attn_output = self.dropout1(self.att(inputs, inputs))
        out1 = self.layernorm1(inputs + attn_output)
        ffn_output = self.dropout2(self.ffn(out1))
        return self.layernorm2(out1 + ffn_output)


class TokenAndPositionEmbedding(layers.Layer):  # keras.io's, unchanged
    def __init__(self, maxlen, vocab_size, embed_dim):
        super().__init__()
        self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
        self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

    def call(self, x):
        positions = self.pos_emb(ops.arange(start=0, stop=ops.shape(x)[-1], step=1))
        return self.token_emb(x) + positions


inputs = layers.Input(shape=(maxlen,), dtype="int32")
if args.model == "transformer":
    x = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)(inputs)
    x = TransformerBlock(embed_dim, num_heads, ff_dim)(x)
    x = layers.GlobalAveragePooling1D()(x)
else:
    x = layers.Embedding(vocab_size, embed_dim)(inputs)
    x = layers.Conv1D(64, 3, activation="relu")(x)
    x = layers.MaxPooling1D(2)(x)
    x = layers.Conv1D(64, 3, activation="relu")(x)
    x = layers.GlobalMaxPooling1D()(x)
x = layers.Dropout(0.1)(x)
x = layers.Dense(20, activation="relu")(x)
x = layers.Dropout(0.1)(x)
outputs = layers.Dense(2, activation="softmax")(x)
model = keras.Model(inputs=inputs, outputs=outputs)

rng = np.random.default_rng(2)
x_data = rng.integers(1, vocab_size, (args.samples, maxlen)).astype("int32")
y_data = rng.integers(0, 2, args.samples).astype("int32")
model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
model.fit(x_data, y_data, batch_size=args.batch_size, epochs=1, verbose=0)  # warm-up
start = time.perf_counter()
history = model.fit(x_data, y_data, batch_size=args.batch_size, epochs=args.epochs, verbose=0)
seconds = time.perf_counter() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
print(f"tf.keras {keras.__version__} {args.model} maxlen {maxlen} batch {args.batch_size}: "
      f"{args.samples * args.epochs / seconds:.1f} samples/s, peak RSS {peak} MiB, loss {history.history['loss'][-1]:.4f}")
