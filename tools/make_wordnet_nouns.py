"""Write trustlib/resources/wordnet_nouns_zipf.tsv.gz: the lower-case alphabetic WordNet 3.0 nouns of spaCy's English
lemma index (spacy-lookups-data 1.0.5, en_lemma_index.json.gz, key "noun"), each with its wordfreq 3.1.1 Zipf
frequency in English (`wordfreq.zipf_frequency(word, "en")`, written with repr so it reads back as the same float),
in the index's order. The DOR paper's outlier vocabulary (trustlib.calibration.dor.wordnet_nouns) reads this table
instead of the two packages (157 MB installed): tests/test_data.py checks that the table equals what the packages give
when they are installed. Licences: trustlib/resources/LICENSE-wordnet_nouns_zipf.txt.

Run it where both packages are installed:  pip install "spacy-lookups-data==1.0.5" "wordfreq==3.1.1"
    python tools/make_wordnet_nouns.py [--check]      (--check: compare with the committed file, write nothing)
"""
import gzip, io, json, sys
from pathlib import Path

OUT = Path(__file__).resolve().parents[1] / "trustlib" / "resources" / "wordnet_nouns_zipf.tsv.gz"

def table_from_packages() -> bytes:
    "The gzip bytes of the table, computed from the installed spacy-lookups-data and wordfreq (deterministic: mtime 0)."
    import spacy_lookups_data
    from wordfreq import zipf_frequency
    path = Path(spacy_lookups_data.__file__).parent / "data" / "en_lemma_index.json.gz"
    with gzip.open(path, "rt", encoding="utf-8") as f: nouns = json.load(f)["noun"]
    lines = [f"{w}\t{zipf_frequency(w, 'en')!r}\n" for w in nouns if w.isalpha() and w.islower()]
    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0, compresslevel=9) as g:
        g.write("".join(lines).encode("utf-8"))
    return buf.getvalue()

if __name__ == "__main__":
    data = table_from_packages()
    if "--check" in sys.argv:
        same = OUT.read_bytes() == data
        print("identical" if same else f"DIFFERS from {OUT}"); sys.exit(0 if same else 1)
    OUT.parent.mkdir(parents=True, exist_ok=True); OUT.write_bytes(data)
    print(f"wrote {OUT} ({len(data):,} bytes)")
