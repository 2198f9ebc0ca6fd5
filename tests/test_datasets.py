"""Tests of the bundled data sets."""

import gzip
import hashlib

import numpy as np
import pandas as pd
import pytest

from scipy import stats
from sklearn.cluster import KMeans
from sklearn.metrics import normalized_mutual_info_score

from pymc_pcrp.datasets import (
    HOUSE_VOTES,
    SIM1_PARAMS,
    SIM2_PARAMS,
    DigitsData,
    load_digits_1to4,
    load_house_votes,
    load_old_faithful,
    read_idx,
    sim1,
    sim2,
)


def test_old_faithful_shape_and_means():
    X = load_old_faithful()
    assert X.shape == (272, 2)
    assert X.dtype == np.float64
    np.testing.assert_allclose(X.mean(axis=0), [3.487783, 70.897059], rtol=0.0, atol=1e-6)
    np.testing.assert_array_equal(X[:3], [[3.6, 79.0], [1.8, 54.0], [3.333, 74.0]])
    # Waiting times are whole minutes.
    np.testing.assert_array_equal(X[:, 1], np.round(X[:, 1]))


def test_old_faithful_equals_shared_copy(shared_data_dir):
    shared = np.loadtxt(shared_data_dir / "old_faithful.csv", delimiter=",", skiprows=1)
    np.testing.assert_array_equal(load_old_faithful(), shared)


def test_old_faithful_standardize():
    raw = load_old_faithful()
    z = load_old_faithful(standardize=True)
    assert z.shape == (272, 2)
    assert z.dtype == np.float64
    np.testing.assert_allclose(z.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(z.std(axis=0), 1.0, rtol=1e-12)
    # sd with ddof=0: R's summary gives sd 1.141371 (ddof=1) for the durations.
    sd0 = 1.141371 * np.sqrt(271 / 272)
    np.testing.assert_allclose(z[0, 0], (3.6 - 3.487783) / sd0, rtol=1e-5)
    np.testing.assert_array_equal(load_old_faithful(standardize=False), raw)


# --------------------------------------------------------------------------- House votes 1984

# Missing votes per bill, in the order of HOUSE_VOTES (R's mlbench::HouseVotes84).
HOUSE_VOTES_MISSING = [12, 48, 11, 11, 15, 11, 14, 15, 22, 7, 21, 31, 25, 17, 28, 104]


def test_house_votes_shape_dtypes_and_levels():
    df = load_house_votes()
    assert df.shape == (435, 17)
    assert list(df.columns) == ["party", *HOUSE_VOTES]
    assert len(HOUSE_VOTES) == 16
    assert isinstance(df.index, pd.RangeIndex)
    assert isinstance(df["party"].dtype, pd.CategoricalDtype)
    assert list(df["party"].cat.categories) == ["democrat", "republican"]
    assert df["party"].value_counts().to_dict() == {"democrat": 267, "republican": 168}
    assert df["party"].notna().all()
    for name in HOUSE_VOTES:
        assert df[name].dtype == pd.BooleanDtype(), name


def test_house_votes_missing_counts():
    votes = load_house_votes()[list(HOUSE_VOTES)]
    assert votes.isna().sum().tolist() == HOUSE_VOTES_MISSING
    assert int(votes.isna().to_numpy().sum()) == 392
    per_row = votes.isna().sum(axis=1)
    assert int((per_row > 0).sum()) == 203
    assert int((per_row == 16).sum()) == 1  # one member with no recorded vote


def test_house_votes_match_the_raw_file():
    from importlib.resources import files

    resource = files("pymc_pcrp") / "data" / "house_votes_84.csv"
    raw_bytes = resource.read_bytes()
    assert hashlib.sha256(raw_bytes).hexdigest() == (
        "403595ecfde59868dc519759c05cd81ffcd9a9e5c96eac14c40f517c52437419"
    )
    lines = raw_bytes.decode("utf-8").splitlines()
    assert lines[0].split(",") == ["party", *HOUSE_VOTES]
    assert lines[1] == "republican,n,y,n,y,y,y,n,n,n,y,?,y,y,y,n,y"
    cells = [line.split(",") for line in lines[1:]]
    assert {value for row in cells for value in row[1:]} == {"y", "n", "?"}
    df = load_house_votes()
    code = {"y": True, "n": False}
    for i in (0, 1, 2, 183, 434):
        expected = [code.get(value, pd.NA) for value in cells[i][1:]]
        got = df.loc[i, list(HOUSE_VOTES)].tolist()
        assert [g is pd.NA for g in got] == [e is pd.NA for e in expected], i
        assert [g for g in got if g is not pd.NA] == [e for e in expected if e is not pd.NA], i
        assert df.loc[i, "party"] == cells[i][0]


def test_house_votes_go_to_the_table_family():
    from pymc_pcrp import table_spec
    from pymc_pcrp.fitting import choose_family

    votes = load_house_votes()[list(HOUSE_VOTES)]
    assert choose_family(votes, None, None) == "table"
    spec = table_spec(votes)
    assert [c.kind for c in spec.columns] == ["bernoulli"] * 16
    _, mask = spec.encode(votes)
    assert int((~mask).sum()) == 392


# --------------------------------------------------------------------------- simulations


@pytest.mark.parametrize(("sim", "params"), [(sim1, SIM1_PARAMS), (sim2, SIM2_PARAMS)])
def test_simulation_shapes_seeds_and_parameters(sim, params):
    X, labels = sim(300)
    assert X.shape == (300, 1)
    assert X.dtype == np.float64
    assert labels.shape == (300,)
    assert labels.dtype == np.int64
    X2, labels2 = sim(300, seed=0)
    np.testing.assert_array_equal(X, X2)
    np.testing.assert_array_equal(labels, labels2)
    X3, _ = sim(300, seed=1)
    assert not np.array_equal(X, X3)
    # Empirical weights, means and sds of a large draw match the documented mixture.
    X, labels = sim(100_000, seed=3)
    k = len(params.weights)
    assert set(np.unique(labels).tolist()) == set(range(k))
    freq = np.bincount(labels, minlength=k) / labels.size
    np.testing.assert_allclose(freq, params.weights, atol=0.01)
    for j in range(k):
        x = X[labels == j, 0]
        assert x.mean() == pytest.approx(params.means[j], abs=0.03)
        assert x.std() == pytest.approx(params.sds[j], abs=0.03)


def test_simulation_parameters_are_the_documented_ones():
    assert SIM1_PARAMS.means == (-4.0, 0.0, 4.0)
    assert SIM1_PARAMS.sds == (1.0, 1.0, 1.0)
    np.testing.assert_allclose(SIM1_PARAMS.weights, [1 / 3] * 3)
    assert SIM2_PARAMS.means == (-3.0, 3.0)
    assert SIM2_PARAMS.sds == (1.0, 1.0)
    assert SIM2_PARAMS.weights == (0.5, 0.5)


def _bayes_labels(x, params):
    w, m, s = (np.asarray(v) for v in params)
    return np.argmax(np.log(w) + stats.norm.logpdf(x[:, None], m, s), axis=1)


@pytest.mark.parametrize(
    ("sim", "params", "error", "nmi"),
    [(sim1, SIM1_PARAMS, 0.030, 0.868), (sim2, SIM2_PARAMS, 0.00135, 0.985)],
)
def test_simulation_overlap_is_as_documented(sim, params, error, nmi):
    # The docstrings justify the separations by the Bayes classifier's error and NMI.
    X, labels = sim(200_000, seed=11)
    guess = _bayes_labels(X[:, 0], params)
    assert np.mean(guess != labels) == pytest.approx(error, rel=0.1)
    assert normalized_mutual_info_score(labels, guess) == pytest.approx(nmi, abs=0.005)


@pytest.mark.parametrize("n", [0, -3, 2.5, True])
def test_simulation_rejects_bad_n(n):
    with pytest.raises(ValueError, match="'n' must be a positive integer"):
        sim1(n)


# --------------------------------------------------------------------------- IDX reader


def _idx_bytes(array, magic=None):
    array = np.asarray(array, dtype=np.uint8)
    if magic is None:
        magic = 0x0800 + array.ndim
    header = magic.to_bytes(4, "big") + b"".join(d.to_bytes(4, "big") for d in array.shape)
    return header + array.tobytes()


def _write(path, payload):
    if path.suffix == ".gz":
        with gzip.open(path, "wb") as handle:
            handle.write(payload)
    else:
        path.write_bytes(payload)
    return path


@pytest.mark.parametrize("suffix", ["", ".gz"])
def test_read_idx_round_trip(tmp_path, suffix):
    rng = np.random.default_rng(0)
    images = rng.integers(0, 256, size=(7, 3, 5), dtype=np.uint8)
    labels = rng.integers(0, 10, size=7, dtype=np.uint8)
    img_path = _write(tmp_path / f"img{suffix}", _idx_bytes(images))
    lab_path = _write(tmp_path / f"lab{suffix}", _idx_bytes(labels))
    assert _idx_bytes(images)[:4] == (2051).to_bytes(4, "big")
    assert _idx_bytes(labels)[:4] == (2049).to_bytes(4, "big")
    got = read_idx(img_path)
    assert got.dtype == np.uint8
    np.testing.assert_array_equal(got, images)
    np.testing.assert_array_equal(read_idx(str(lab_path)), labels)


def test_read_idx_errors(tmp_path):
    good = _idx_bytes(np.arange(24).reshape(2, 3, 4))
    with pytest.raises(ValueError, match=r"'.*missing-file' does not exist"):
        read_idx(tmp_path / "missing-file")
    # A little-endian header, a common mistake: 2051 read big-endian is 0x03080000.
    swapped = int.from_bytes((2051).to_bytes(4, "big"), "little")
    bad_magic = _write(tmp_path / "bad-magic", _idx_bytes(np.arange(24).reshape(2, 3, 4), swapped))
    with pytest.raises(ValueError, match=r"bad-magic' has magic number 50855936"):
        read_idx(bad_magic)
    float_idx = _write(tmp_path / "float-idx", _idx_bytes(np.arange(4), magic=0x0D01))
    with pytest.raises(ValueError, match="float-idx' has magic number 3329"):
        read_idx(float_idx)
    short = _write(tmp_path / "short.gz", good[:-5])
    with pytest.raises(ValueError, match=r"short.gz' is truncated: .*shape \(2, 3, 4\).*holds 19"):
        read_idx(short)
    short_header = _write(tmp_path / "short-header", good[:9])
    with pytest.raises(ValueError, match="short-header' is truncated: its 3-dimensional header"):
        read_idx(short_header)
    tiny = _write(tmp_path / "tiny", good[:2])
    with pytest.raises(ValueError, match="tiny' is truncated: 2 bytes"):
        read_idx(tiny)
    trailing = _write(tmp_path / "trailing", good + b"\x00")
    with pytest.raises(ValueError, match="trailing' is malformed"):
        read_idx(trailing)
    not_gzip = _write(tmp_path / "not-gzip.gz.raw", good)
    renamed = not_gzip.rename(tmp_path / "not-gzip.gz")
    with pytest.raises(ValueError, match=r"not-gzip\.gz' could not be read"):
        read_idx(renamed)


# --------------------------------------------------------------------------- digits 1-4

SIDE = 6


def _fake_mnist(folder, n_per_digit=30, gz=True, split="train", seed=0):
    """Small IDX files: digit d lights row d of a 6x6 image, plus noise."""
    rng = np.random.default_rng(seed)
    digits = np.repeat(np.arange(6), n_per_digit)
    rng.shuffle(digits)
    images = rng.integers(0, 150, size=(digits.size, SIDE, SIDE))
    images[np.arange(digits.size), digits, :] += 100
    prefix = "train" if split == "train" else "t10k"
    suffix = ".gz" if gz else ""
    folder.mkdir(exist_ok=True)
    _write(folder / f"{prefix}-images-idx3-ubyte{suffix}", _idx_bytes(images))
    _write(folder / f"{prefix}-labels-idx1-ubyte{suffix}", _idx_bytes(digits))
    return images, digits


@pytest.mark.parametrize("gz", [True, False])
def test_digits_from_idx_folder(tmp_path, gz):
    _, digits = _fake_mnist(tmp_path, gz=gz)
    data = load_digits_1to4(80, seed=4, source=tmp_path, n_neighbors=10)
    assert isinstance(data, DigitsData)
    assert data.source == "mnist-train"
    assert data.X.shape == (80, 2)
    assert data.X.dtype == np.float64
    np.testing.assert_allclose(data.X.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(data.X.std(axis=0), 1.0, rtol=1e-12)
    assert data.labels.dtype == np.int64
    assert set(data.labels.tolist()) <= {1, 2, 3, 4}
    assert np.all(np.diff(data.indices) > 0)  # sorted, no repeats
    np.testing.assert_array_equal(data.labels, digits[data.indices])
    # Same seed, same sample and embedding; the tuple unpacks.
    X, labels, indices, source = load_digits_1to4(80, seed=4, source=str(tmp_path), n_neighbors=10)
    np.testing.assert_array_equal(labels, data.labels)
    assert source == "mnist-train"
    np.testing.assert_array_equal(X, data.X)
    np.testing.assert_array_equal(indices, data.indices)
    # A disjoint second sample.
    rest = load_digits_1to4(40, seed=5, source=tmp_path, exclude=data.indices, n_neighbors=10)
    assert np.intersect1d(rest.indices, data.indices).size == 0
    with pytest.raises(ValueError, match="'n' = 41 exceeds the 40 images"):
        load_digits_1to4(41, seed=5, source=tmp_path, exclude=data.indices)


def test_digits_test_split_and_missing_files(tmp_path):
    _fake_mnist(tmp_path, split="test", gz=False)
    data = load_digits_1to4(50, source=tmp_path, split="test", n_neighbors=8)
    assert data.source == "mnist-test"
    with pytest.raises(ValueError, match=r"'train-images-idx3-ubyte' .*not found"):
        load_digits_1to4(50, source=tmp_path)
    with pytest.raises(ValueError, match="'split' must be 'train' or 'test'"):
        load_digits_1to4(50, source=tmp_path, split="valid")
    with pytest.raises(ValueError, match="is not a folder"):
        load_digits_1to4(50, source=tmp_path / "nowhere")


def test_digits_malformed_idx_folder(tmp_path):
    images, digits = _fake_mnist(tmp_path, gz=False)
    labels_path = tmp_path / "train-labels-idx1-ubyte"
    _write(labels_path, _idx_bytes(digits[:-1]))
    with pytest.raises(ValueError, match=r"holds 180 images but .*labels-idx1-ubyte' holds 179"):
        load_digits_1to4(20, source=tmp_path)
    # Files swapped: the label file where the images should be.
    _write(tmp_path / "train-images-idx3-ubyte", _idx_bytes(digits))
    with pytest.raises(ValueError, match="images-idx3-ubyte' is not an image file"):
        load_digits_1to4(20, source=tmp_path)
    _write(tmp_path / "train-images-idx3-ubyte", _idx_bytes(images)[:-1])
    with pytest.raises(ValueError, match="images-idx3-ubyte' is truncated"):
        load_digits_1to4(20, source=tmp_path)


def _nearest_centroid_accuracy(X, labels):
    classes = np.unique(labels)
    centres = np.array([X[labels == c].mean(axis=0) for c in classes])
    guess = classes[np.argmin(((X[:, None, :] - centres) ** 2).sum(axis=2), axis=1)]
    return np.mean(guess == labels)


def _kmeans_nmi(X, labels):
    found = KMeans(n_clusters=4, n_init=3, random_state=0).fit_predict(X)
    return normalized_mutual_info_score(labels, found)


def test_digits_sklearn_stand_in():
    data = load_digits_1to4(500, seed=0)
    assert data.source == "sklearn-8x8"
    assert data.X.shape == (500, 2)
    assert set(data.labels.tolist()) == {1, 2, 3, 4}
    assert np.bincount(data.labels, minlength=5)[1:].min() > 100
    # Measured: nearest-centroid accuracy 0.93, k-means NMI 0.82 (chance: 0.25 and 0).
    assert _nearest_centroid_accuracy(data.X, data.labels) > 0.85
    assert _kmeans_nmi(data.X, data.labels) > 0.7
    again = load_digits_1to4(500, seed=0)
    np.testing.assert_array_equal(again.X, data.X)
    assert not np.array_equal(load_digits_1to4(500, seed=1).indices, data.indices)


def test_digits_sklearn_stand_in_size_limit():
    everything = load_digits_1to4(723)
    np.testing.assert_array_equal(np.bincount(everything.labels)[1:], [182, 177, 183, 181])
    with pytest.raises(
        ValueError, match=r"'n' = 1000 exceeds the 723 images .*MNIST.*replace=True"
    ):
        load_digits_1to4(1000)
    with_replacement = load_digits_1to4(1000, seed=2, replace=True)
    assert with_replacement.X.shape == (1000, 2)
    assert np.unique(with_replacement.indices).size < 1000


def test_digits_from_shared_mnist(shared_data_dir):
    mnist = shared_data_dir / "mnist"
    data = load_digits_1to4(1000, seed=0, source=mnist)
    assert data.source == "mnist-train"
    assert data.X.shape == (1000, 2)
    # The labels are those of the chosen rows of the real label file.
    all_labels = read_idx(mnist / "train-labels-idx1-ubyte.gz")
    assert all_labels.shape == (60000,)
    np.testing.assert_array_equal(data.labels, all_labels[data.indices])
    assert np.bincount(all_labels)[1:5].tolist() == [6742, 5958, 6131, 5842]
    assert np.bincount(data.labels, minlength=5)[1:].min() > 200
    # Measured: nearest-centroid accuracy 0.86, k-means NMI 0.67 (the paper: NMI 0.65).
    assert _nearest_centroid_accuracy(data.X, data.labels) > 0.75
    assert _kmeans_nmi(data.X, data.labels) > 0.55
