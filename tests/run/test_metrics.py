"""Each metric against a hand computation (and sklearn where it has the same definition)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from sklearn.metrics import f1_score, precision_score, recall_score, roc_auc_score

from trainledger.run import metrics as M

Y_PRED = np.array(
    [
        [0.9, 0.1, 0.0],
        [0.2, 0.7, 0.1],
        [0.1, 0.2, 0.7],
        [0.6, 0.3, 0.1],
        [0.1, 0.8, 0.1],
        [0.3, 0.3, 0.4],
    ]
)
Y = np.array([0, 1, 1, 0, 2, 2])  # predictions: 0 1 2 0 1 2 -> 4/6 correct


def test_accuracy_by_hand_and_batched() -> None:
    acc = M.Accuracy()
    acc.update(torch.tensor(Y_PRED[:3]), torch.tensor(Y[:3]))
    acc.update(Y_PRED[3:], Y[3:])
    assert acc.eval() == pytest.approx(4 / 6)
    acc.clear()
    acc.update(Y_PRED, np.eye(3)[Y])  # one-hot labels
    assert acc.eval() == pytest.approx(4 / 6)


def test_accuracy_binary_scores() -> None:
    acc = M.Accuracy()
    acc.update(np.array([0.2, 0.8, 0.6, 0.4]), np.array([0, 1, 0, 0]))
    assert acc.eval() == pytest.approx(3 / 4)


def test_precision_recall_f1_by_hand() -> None:
    # class 0: tp 2, predicted 2, actual 2 -> P 1, R 1
    # class 1: tp 1, predicted 2, actual 2 -> P 1/2, R 1/2
    # class 2: tp 1, predicted 2, actual 2 -> P 1/2, R 1/2
    p, r, f = M.Precision(), M.Recall(), M.F1()
    for metric in (p, r, f):
        metric.update(Y_PRED, Y)
    assert p.eval() == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert r.eval() == pytest.approx((1 + 0.5 + 0.5) / 3)
    assert f.eval() == pytest.approx((1 + 0.5 + 0.5) / 3)
    pred = Y_PRED.argmax(1)
    assert p.eval() == pytest.approx(precision_score(Y, pred, average="macro"))
    assert r.eval() == pytest.approx(recall_score(Y, pred, average="macro"))
    assert f.eval() == pytest.approx(f1_score(Y, pred, average="macro"))
    per_class = M.Precision(average=None)
    per_class.update(Y_PRED, Y)
    np.testing.assert_allclose(per_class.eval(), [1.0, 0.5, 0.5])


def test_f1_unbalanced_against_sklearn() -> None:
    rng = np.random.default_rng(0)
    scores = rng.random((50, 4))
    labels = rng.integers(0, 4, 50)
    f = M.F1()
    f.update(scores[:20], labels[:20])
    f.update(scores[20:], labels[20:])
    assert f.eval() == pytest.approx(f1_score(labels, scores.argmax(1), average="macro"))
    micro = M.Precision(average="micro")
    micro.update(scores, labels)
    assert micro.eval() == pytest.approx(float((scores.argmax(1) == labels).mean()))


def test_mae_mse_by_hand() -> None:
    pred = np.array([[1.0, 2.0], [3.0, 5.0]])
    true = np.array([[1.5, 2.0], [2.0, 7.0]])
    mae, mse = M.MAE(), M.MSE()
    mae.update(pred, true)
    mse.update(torch.tensor(pred), torch.tensor(true))
    assert mae.eval() == pytest.approx((0.5 + 0 + 1 + 2) / 4)
    assert mse.eval() == pytest.approx((0.25 + 0 + 1 + 4) / 4)


def test_loss_mean_of_batches() -> None:
    loss = M.Loss()
    loss.update(torch.tensor(2.0))
    loss.update(np.float32(4.0))
    assert loss.eval() == pytest.approx(3.0)
    assert M.Loss.needs_loss


def test_auc_by_hand_with_ties() -> None:
    # positives scores 0.8, 0.4; negatives 0.4, 0.1: pairs (0.8>0.4, 0.8>0.1, 0.4=0.4 half, 0.4>0.1)
    auc = M.ROCAUC()
    auc.update(np.array([0.8, 0.4]), np.array([1, 0]))
    auc.update(np.array([0.4, 0.1]), np.array([1, 0]))
    assert auc.eval() == pytest.approx(3.5 / 4)


def test_auc_against_sklearn_binary_and_multiclass() -> None:
    rng = np.random.default_rng(1)
    scores = rng.random(200).round(2)  # rounding makes ties
    labels = (rng.random(200) < scores).astype(int)
    assert M.roc_auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores))
    two = M.ROCAUC()
    two.update(np.stack([1 - scores, scores], 1), labels)
    assert two.eval() == pytest.approx(roc_auc_score(labels, scores))
    probs = rng.random((120, 3))
    probs /= probs.sum(1, keepdims=True)
    y = rng.integers(0, 3, 120)
    multi = M.ROCAUC()
    multi.update(probs, y)
    assert multi.eval() == pytest.approx(roc_auc_score(y, probs, multi_class="ovr"))


def test_auc_single_class_is_nan() -> None:
    assert np.isnan(M.roc_auc(np.array([0.1, 0.2]), np.array([1, 1])))


def test_eval_before_update_is_an_error() -> None:
    for cls in (M.Accuracy, M.Loss, M.F1, M.MAE, M.ROCAUC):
        with pytest.raises(RuntimeError, match="before any update"):
            cls().eval()


def test_bfloat16_tensors() -> None:
    acc = M.Accuracy()
    acc.update(torch.tensor(Y_PRED, dtype=torch.bfloat16), torch.tensor(Y))
    assert acc.eval() == pytest.approx(4 / 6)


def test_names_case_insensitive_keys_as_given() -> None:
    got = M.get_metrics(
        {"Accuracy", "acc", "F1", "auc", "mse", "mae", "loss", "precision", "recall"}
    )
    assert set(got) == {"Accuracy", "acc", "F1", "auc", "mse", "mae", "loss", "precision", "recall"}
    assert isinstance(got["Accuracy"], M.Accuracy) and isinstance(got["auc"], M.ROCAUC)
    custom = M.get_metrics({"top": M.Accuracy()})
    assert list(custom) == ["top"]
    with pytest.raises(ValueError, match="unknown metric name 'bleu'"):
        M.get_metrics({"bleu"})


def test_update_arity_errors() -> None:
    with pytest.raises(
        ValueError, match=r"Accuracy.update expected 2 inputs \(y_pred, y\), received: 1"
    ):
        M.Accuracy().update(Y_PRED)
    with pytest.raises(ValueError, match="same number of samples"):
        M.Accuracy().update(Y_PRED, Y[:2])
