"""The reuse model: bucketed features, an online logistic regression, its weights file.

A leaf is described at each of its own events by a handful of small integer
features (:data:`FEATURES`: name and number of buckets). Each (feature,
bucket) pair has one weight; the model's estimate that the leaf is reused
within the label horizon is ``sigmoid(bias + sum of the active weights)``.

Training is mini-batch stochastic gradient descent on the log loss with
AdaGrad step sizes: each labelled sample adds ``(label - p)`` to the gradient
of its active weights, and every ``batch`` labels the mean gradient is
applied, each weight's step being ``learning_rate / sqrt(sum of its squared
gradients so far)``, with an L2 shrink. Everything is
pure Python over ~a dozen active weights per sample, so a prediction or an
update costs a few microseconds.

The weights file
----------------
A UTF-8 JSON object (``save`` writes it, ``load`` reads it)::

    {
      "format": "radix-evict-learned-weights",
      "version": 1,
      "bias": -0.41,
      "features": {"event": [0.12, -1.9, 0.4, -0.3], "hits": [...], ...},
      "labels": 123456,
      "positive_rate": 0.31,
      "mean_logit": -2.7,
      "source": "free text: where the weights were trained"
    }

``features`` maps every name of :data:`FEATURES` to a list of exactly that
many floats (bucket ``i`` is the weight of value ``i``); a name missing from
the file starts at 0, an unknown name or a list of the wrong length is an
error. ``mean_logit`` is the running mean of the model's log-odds over the
leaves it scored, the reference a lifetime is measured from (the policy
starts from it). ``labels`` (how many samples trained it, an integer >= 0),
``positive_rate`` (their share of positives) and ``source`` are
informational. All numbers must be finite, and the log-odds the weights can
reach (``|bias|`` plus each feature's largest ``|weight|``) and ``|mean_logit|``
at most :data:`MAX_LOGIT`. Loading a file with another
``format`` or a higher ``version`` is an error naming the file.
"""

from __future__ import annotations

import json
import math
import os
from typing import Any

from radix_evict.inputs import InputError, InputFileError, read_json_file

FORMAT = "radix-evict-learned-weights"
VERSION = 1

# (name, buckets). The policy computes each value already clipped to range(buckets).
FEATURES: tuple[tuple[str, int], ...] = (
    ("event", 4),  # what made the node a scored leaf: insert, hit, split tail, orphaned
    ("hits", 6),  # lookups that reached the node: 0..4, 5+
    ("returned", 3),  # its branch was evicted before: no, yes (not reused), yes (reused)
    ("depth", 24),  # log2 of the tokens from the root through the node
    ("size", 20),  # log2 of the node's own tokens
    ("level", 17),  # nodes from the root to this one (a conversation's turn, roughly): 1..16+
    ("parent_hits", 7),  # lookups that reached the parent: 0..4, 5+, 6 = the parent is the root
    ("siblings", 6),  # the parent's children: 1, 2, 3, 4-7, 8-15, 16+
    ("gap", 24),  # log2 of clock ticks since the parent (hit: the node) was last looked up
    ("age", 24),  # log2 of clock ticks since the node was created
    ("turn", 10),  # the request context's turn: 0..7, 8+, 9 = unknown
    ("kind", 9),  # the request context's kind, hashed: 0..7, 8 = unknown
    ("event_hits", 24),  # cross of event and hits
    ("chain", 12),  # ancestors a lookup has reached (a conversation's turn): 0..10, 11+
    ("parent_returned", 3),  # the parent's own `returned` value
    ("output", 17),  # log2 of the request context's output length: 0..15, 16 = unknown
    ("size_output", 64),  # cross of size (8 levels, from 512 tokens) and output (8 levels)
    # Client hints (RequestContext; docs/hints.md), present only when the request sent one,
    # so a replay without hints computes exactly what it did before they existed:
    ("session_end", 2),  # the request says its session ended: no, yes
    ("return_s", 12),  # log2 of the seconds it asked to be kept / said it returns in: 0..11
)
NAMES = tuple(name for name, _ in FEATURES)
SIZES = dict(FEATURES)
OFFSETS: dict[str, int] = {}
_at = 0
for _name, _n in FEATURES:
    OFFSETS[_name] = _at
    _at += _n
WIDTH = _at
del _at, _name, _n
# The largest log-odds a file may reach (|bias| + each feature's largest |weight|), and its
# largest |mean_logit|. Trained weights are a few units (the sigmoid is 0 or 1 past +-37);
# the bound keeps 1 + sharpness * (logit - mean_logit) finite, so no score is ever NaN.
MAX_LOGIT = 1e6


class WeightsFileError(ValueError):
    """A weights file that cannot be used; the message names the file and the problem."""


def sigmoid(z: float) -> float:
    if z >= 0:
        return 1.0 / (1.0 + math.exp(-z))
    e = math.exp(z)
    return e / (1.0 + e)


class ReuseModel:
    """Logistic regression over one-hot buckets (indices into one flat weight list)."""

    __slots__ = ("_acc", "_acc_bias", "_grad", "_grad_bias", "_pending", "batch", "bias", "l2",
                 "labels", "learning_rate", "positives", "w")

    def __init__(self, learning_rate: float = 0.05, batch: int = 32, l2: float = 1e-4,
                 bias: float = 0.0) -> None:
        self.w = [0.0] * WIDTH
        self.bias = bias
        # AdaGrad: each weight's step is divided by the root of its summed squared gradients,
        # so rare buckets learn as fast as common ones (one-hot features are very sparse).
        self._acc = [1e-6] * WIDTH
        self._acc_bias = 1e-6
        self.learning_rate = learning_rate
        self.batch = batch
        self.l2 = l2
        self._grad: dict[int, float] = {}
        self._grad_bias = 0.0
        self._pending = 0
        self.labels = 0
        self.positives = 0.0

    def logit(self, x: tuple[int, ...]) -> float:
        w = self.w
        z = self.bias
        for i in x:
            z += w[i]
        return z

    def predict(self, x: tuple[int, ...]) -> float:
        return sigmoid(self.logit(x))

    def learn(self, x: tuple[int, ...], label: bool) -> None:
        """Add one labelled sample; apply the gradient every ``batch`` samples."""
        err = (1.0 if label else 0.0) - self.predict(x)
        grad = self._grad
        for i in x:
            grad[i] = grad.get(i, 0.0) + err
        self._grad_bias += err
        self.labels += 1
        self.positives += label
        self._pending += 1
        if self._pending >= self.batch:
            self.step()

    def step(self) -> None:
        """Apply the accumulated gradient (a no-op with nothing pending)."""
        if not self._pending:
            return
        n = self._pending
        lr = self.learning_rate
        w, acc, shrink = self.w, self._acc, 1.0 - lr * self.l2
        for i, g in self._grad.items():
            g /= n
            a = acc[i] + g * g
            acc[i] = a
            w[i] = w[i] * shrink + lr * g / math.sqrt(a)
        g = self._grad_bias / n
        self._acc_bias += g * g
        self.bias += lr * g / math.sqrt(self._acc_bias)
        self._grad.clear()
        self._grad_bias = 0.0
        self._pending = 0

    # ------------------------------------------------------------------ the file
    def to_json(self, mean_logit: float, source: str = "") -> dict[str, Any]:
        feats = {name: self.w[OFFSETS[name]: OFFSETS[name] + n]
                 for name, n in FEATURES}
        return {
            "format": FORMAT,
            "version": VERSION,
            "bias": self.bias,
            "features": feats,
            "labels": self.labels,
            "positive_rate": round(self.positives / self.labels, 6) if self.labels else 0.0,
            "mean_logit": float(mean_logit),
            "source": source,
        }

    def save(self, path: str | os.PathLike[str], mean_logit: float, source: str = "") -> None:
        self.step()
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(mean_logit, source), f, indent=1)
            f.write("\n")

    def load_json(self, data: Any, where: str) -> float:
        """Take the weights from a parsed weights file; returns its ``mean_logit``."""

        def bad(problem: str) -> WeightsFileError:
            return WeightsFileError(f"{where}: {problem}")

        if not isinstance(data, dict):
            raise bad(f"expected a JSON object, got {type(data).__name__}")
        if data.get("format") != FORMAT:
            raise bad(f"'format' must be {FORMAT!r}, got {data.get('format')!r}")
        version = data.get("version")
        if type(version) is not int or not 1 <= version <= VERSION:
            raise bad(f"'version' must be an integer from 1 to {VERSION}, got {version!r}")
        bias = data.get("bias", 0.0)
        if not _finite(bias):
            raise bad(f"'bias' must be a finite number, got {bias!r}")
        feats = data.get("features", {})
        if not isinstance(feats, dict):
            raise bad(f"'features' must be an object, got {type(feats).__name__}")
        w = [0.0] * WIDTH
        for name, values in feats.items():
            if name not in SIZES:
                raise bad(f"unknown feature {name!r} (known: {', '.join(NAMES)})")
            n = SIZES[name]
            if not isinstance(values, list) or len(values) != n:
                raise bad(f"feature {name!r} needs a list of {n} numbers")
            for j, v in enumerate(values):
                if not _finite(v):
                    raise bad(f"feature {name!r}[{j}] must be a finite number, got {v!r}")
                w[OFFSETS[name] + j] = float(v)
        mean = data.get("mean_logit", 0.0)
        if not _finite(mean):
            raise bad(f"'mean_logit' must be a finite number, got {mean!r}")
        labels = data.get("labels", 0)
        if type(labels) is not int or labels < 0:
            raise bad(f"'labels' must be an integer >= 0, got {labels!r}")
        rate = data.get("positive_rate", 0.0)
        if not _finite(rate) or not 0 <= rate <= 1:
            raise bad(f"'positive_rate' must be a number from 0 to 1, got {rate!r}")
        reach = abs(bias) + sum(max(map(abs, w[OFFSETS[name]: OFFSETS[name] + n]))
                                for name, n in FEATURES)
        if not reach <= MAX_LOGIT:
            raise bad(f"the weights reach a log-odds of {reach:.3g} (bias plus each feature's "
                      f"largest weight), over the limit of {MAX_LOGIT:g}: a score built on "
                      "them would overflow")
        if not abs(mean) <= MAX_LOGIT:
            raise bad(f"'mean_logit' {mean!r} is over the limit of {MAX_LOGIT:g} in size")
        self.w = w
        self.bias = float(bias)
        self.labels = labels
        self.positives = rate * labels
        return float(mean)

    def load(self, path: str | os.PathLike[str]) -> float:
        """Read a weights file through radix-evict's bounded reader (a regular file, at most
        CONFIG_BYTES, UTF-8 with or without a BOM): a FIFO or ``/dev/zero`` is refused."""
        where = os.fspath(path)
        try:
            data = read_json_file(path, what="a weights file")
        except InputFileError as e:
            raise WeightsFileError(f"{where}: cannot read the weights file ({e.reason})") from e
        except (json.JSONDecodeError, InputError) as e:
            raise WeightsFileError(f"{where}: not a JSON weights file ({e})") from e
        return self.load_json(data, where)


def _finite(v: object) -> bool:
    return type(v) in (int, float) and math.isfinite(v)  # type: ignore[arg-type]
