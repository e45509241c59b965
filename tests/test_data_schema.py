import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from maskbench.data.checksum import CHECKSUM_KEY, with_checksum
from maskbench.data.schema import PREPARED_FORMATS, DataError, read_prepared, validate_frame, write_prepared

LABELS = ["entailment", "neutral", "contradiction"]
WHERE = "results/x.parquet"


def frame(**overrides):
    data = {
        "id": ["mnli-1", "mnli-2", "mnli-3"],
        "text_a": ["A man sleeps.", "Two dogs run.", "It rains."],
        "text_b": ["A person rests.", "", "It is dry."],
        "label": np.array([0, 1, 2], dtype=np.int64),
        "heuristic": ["lexical_overlap", "subsequence", "constituent"],
    }
    data.update(overrides)
    return pd.DataFrame(data)


def test_valid_frame_passes():
    validate_frame(frame(), LABELS, WHERE)
    validate_frame(frame(), LABELS, WHERE, track="nlu")


def test_each_track_says_how_its_prepared_data_looks():
    nlu = PREPARED_FORMATS["nlu"]
    assert nlu.columns == ("id", "text_a", "text_b", "label") and nlu.strings == ("id", "text_a", "text_b")
    with pytest.raises(DataError, match="track 'vision' has no prepared format"):
        validate_frame(frame(), LABELS, WHERE, track="vision")


def test_round_trip_keeps_rows_labels_metadata_and_extra_columns(tmp_path):
    path = tmp_path / "sub" / "mnli.parquet"
    write_prepared(frame(), LABELS, path, {"dataset": "mnli_dev", "task": "mnli", "source": "hf:nyu-mll/glue"})
    df, labels, meta = read_prepared(path)
    assert labels == LABELS
    assert meta == {"dataset": "mnli_dev", "task": "mnli", "source": "hf:nyu-mll/glue", "labels": LABELS}
    assert df["id"].tolist() == ["mnli-1", "mnli-2", "mnli-3"]
    assert df["text_b"].tolist() == ["A person rests.", "", "It is dry."]
    assert df["label"].tolist() == [0, 1, 2]
    assert str(df["label"].dtype) == "int64"
    assert df["heuristic"].tolist() == ["lexical_overlap", "subsequence", "constituent"]
    stored = json.loads(pq.read_schema(path).metadata[b"maskbench"])
    assert stored["labels"] == LABELS
    assert [p.name for p in path.parent.iterdir()] == ["mnli.parquet"]  # no temporary file left


def test_duplicated_id_message_names_file_field_and_value():
    df = frame(id=["mnli-3", "mnli-1", "mnli-3"])
    with pytest.raises(DataError) as err:
        validate_frame(df, LABELS, WHERE)
    # positions count from 1 (a local file's messages give its line instead: tests/test_real_nli_data.py)
    assert str(err.value) == "results/x.parquet: field 'id' has duplicated value 'mnli-3' at row 3 (first at row 1)"


@pytest.mark.parametrize(
    ("df", "expected"),
    [
        (frame().drop(columns=["text_b"]), ["field 'text_b'", "missing"]),
        (frame().iloc[:0], ["field 'id'", "0 values", "empty split"]),
        (frame(text_a=["ok", None, "ok"]), ["field 'text_a'", "null value at row 2"]),
        (frame(text_b=["ok", 5, "ok"]), ["field 'text_b'", "non-string value 5 (int) at row 2"]),
        (frame(id=["a", 7, "c"]), ["field 'id'", "non-string value 7"]),
        (frame(label=[0, 3, 1]), ["field 'label'", "value 3 at row 2 outside"]),
        (frame(label=[0, -1, 1]), ["field 'label'", "value -1"]),
        (frame(label=[0.0, 1.5, 2.0]), ["field 'label'", "non-integer value 0.0 (float)"]),
        (frame(label=pd.Series(["entailment", 1, 2], dtype=object)), ["field 'label'", "'entailment'"]),
        (frame(label=[True, False, True]), ["field 'label'", "non-integer", "True"]),
        (frame(label=[0, None, 1]), ["field 'label'", "null value at row 2"]),
    ],
)
def test_bad_frames_name_file_field_and_value(df, expected):
    with pytest.raises(DataError) as err:
        validate_frame(df, LABELS, WHERE)
    message = str(err.value)
    assert message.startswith(WHERE + ": ")
    for part in expected:
        assert part in message


def test_bad_label_list():
    with pytest.raises(DataError, match="field 'labels' has duplicated value 'neutral'"):
        validate_frame(frame(), ["entailment", "neutral", "neutral"], WHERE)


def test_write_prepared_validates_and_writes_nothing(tmp_path):
    path = tmp_path / "bad.parquet"
    with pytest.raises(DataError) as err:
        write_prepared(frame(label=[0, 1, 9]), LABELS, path, {"dataset": "d"})
    assert str(path) in str(err.value)
    assert list(tmp_path.iterdir()) == []


def test_read_prepared_rejects_plain_parquet_and_missing_file(tmp_path):
    plain = tmp_path / "plain.parquet"
    pq.write_table(pa.Table.from_pandas(frame(), preserve_index=False), plain)
    with pytest.raises(DataError, match=r"plain\.parquet: field 'metadata'"):
        read_prepared(plain)
    missing = tmp_path / "nope.parquet"
    with pytest.raises(DataError, match=r"nope\.parquet"):
        read_prepared(missing)


def test_read_prepared_validates_content(tmp_path):
    path = tmp_path / "dup.parquet"
    table = pa.Table.from_pandas(frame(id=["x", "x", "y"]), preserve_index=False)
    table = table.replace_schema_metadata({b"maskbench": json.dumps({"labels": LABELS}).encode()})
    pq.write_table(with_checksum(table), path)  # a writer's bug, not damage: the checksum matches
    with pytest.raises(DataError, match=r"dup\.parquet: field 'id' has duplicated value 'x'"):
        read_prepared(path)


def test_prepared_file_carries_a_checksum_over_data_and_metadata(tmp_path):
    path = tmp_path / "mnli.parquet"
    write_prepared(frame(), LABELS, path, {"dataset": "mnli_dev", "task": "mnli"})
    table = pq.read_table(path)
    assert len(table.schema.metadata[CHECKSUM_KEY]) == 64
    read_prepared(path)
    # another text under the old checksum: refused, the file named
    changed = table.set_column(1, "text_a", pa.array(["A man sleeps!", "Two dogs run.", "It rains."]))
    pq.write_table(changed, tmp_path / "edited.parquet")
    with pytest.raises(DataError, match=r"edited\.parquet: field 'metadata' has checksum .* the file is corrupted"):
        read_prepared(tmp_path / "edited.parquet")
    # other label names under the old checksum
    metadata = dict(table.schema.metadata)
    metadata[b"maskbench"] = metadata[b"maskbench"].replace(b"neutral", b"neutrel")
    pq.write_table(table.replace_schema_metadata(metadata), tmp_path / "labels.parquet")
    with pytest.raises(DataError, match=r"labels\.parquet: .*corrupted"):
        read_prepared(tmp_path / "labels.parquet")
    # no checksum at all
    metadata.pop(CHECKSUM_KEY)
    pq.write_table(table.replace_schema_metadata(metadata), tmp_path / "old.parquet")
    with pytest.raises(DataError, match=r"old\.parquet: field 'metadata' has no 'maskbench.sha256' checksum"):
        read_prepared(tmp_path / "old.parquet")


def test_damaged_prepared_file_is_refused_naming_it(tmp_path):
    from maskbench.data.synthetic import generate

    data, labels = generate("nli", "train", 40, seed=0, rho=0.9)
    path = tmp_path / "train.parquet"
    write_prepared(data, labels, path, {"dataset": "train", "task": "mnli"})
    reference, _, meta = read_prepared(path)
    raw = path.read_bytes()
    broken = tmp_path / "broken.parquet"
    positions = range(0, len(raw), len(raw) // 250 + 1)  # a sample: every byte takes ~20 s on a busy machine
    refused = 0
    for position in positions:
        changed = bytearray(raw)
        changed[position] ^= 0xFF
        broken.write_bytes(bytes(changed))
        try:
            df, names, got = read_prepared(broken)
        except DataError as err:
            assert str(err).startswith(f"{broken}: "), (position, str(err))
            refused += 1
            continue
        # what gets through is a byte nothing reads (the leading magic, page statistics): the same data
        assert df.equals(reference) and names == labels and got == meta, position
    assert refused > 0.6 * len(positions)
