"""Bad output paths and seeds are refused when the command line is read, in one line naming the value, before any
run starts; handlers a command installs for Ctrl-C and SIGTERM are put back when it ends."""
import json
import math
import signal

import pytest

from elasticity import json_report
from elastream.cli import main
from elastream.interrupts import interruptible


def refused(argv, capsys) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


@pytest.mark.parametrize("value, words", [("-1", "seed -1 is outside 0 .. 4294967295"),
                                          ("4294967296", "outside 0 .. 4294967295"),
                                          ("x", "invalid seed 'x'")])
def test_a_seed_numpy_would_refuse_is_refused_first(value, words, capsys):
    assert words in refused(["simulate", "--scenario", "step", "--seed", value], capsys)


def test_json_into_a_missing_folder_or_onto_a_folder_is_refused(tmp_path, capsys):
    line = refused(["simulate", "--scenario", "step", "--json", str(tmp_path / "no" / "x.json")], capsys)
    assert f"folder {tmp_path / 'no'} does not exist" in line
    assert "is a folder" in refused(["simulate", "--scenario", "step", "--json", str(tmp_path)], capsys)
    assert "standard output" in refused(["simulate", "--scenario", "step", "--json", "-"], capsys)
    line = refused(["bench", "elasticity", "--traces", str(tmp_path), "--json", str(tmp_path / "f" / "x")], capsys)
    assert "does not exist" in line


def test_a_plot_must_name_an_image_format(tmp_path, capsys):
    line = refused(["simulate", "--scenario", "step", "--plot", str(tmp_path / "out.txt")], capsys)
    assert "the extension must name an image format" in line and ".png" in line


def test_a_folder_option_given_a_file_is_refused(tmp_path, capsys):
    a_file = tmp_path / "f"
    a_file.write_text("")
    assert "is a file, not a folder" in refused(["crds", "--out", str(a_file)], capsys)
    assert "is a file, not a folder" in refused(["bench", "elasticity", "--write-traces", str(a_file)], capsys)
    assert "is not a folder" in refused(["run", "x.yaml", "--report", str(a_file / "sub")], capsys)
    assert "empty string" in refused(["crds", "--out", ""], capsys)


def test_good_paths_pass_through(tmp_path, capsys):
    out = tmp_path / "x.json"
    plot = tmp_path / "x.svg"
    assert main(["simulate", "--scenario", "step", "--json", str(out), "--plot", str(plot)]) == 0
    assert json.loads(out.read_text()) and plot.stat().st_size > 1000


def test_reports_are_strict_json():
    text = json_report.dumps({"floor": math.inf, "ratios": [1.5, -math.inf, math.nan], "n": 3})
    assert json.loads(text) == {"floor": None, "ratios": [1.5, None, None], "n": 3}
    assert "Infinity" not in text and "NaN" not in text


def test_interruptible_puts_the_handlers_back():
    def mine(signum, frame):
        pass

    before = signal.signal(signal.SIGTERM, mine)
    try:
        with interruptible():
            assert signal.getsignal(signal.SIGTERM) is not mine
            with pytest.raises(KeyboardInterrupt):
                signal.raise_signal(signal.SIGTERM)
        assert signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, before)


def test_bench_counts_and_lists_must_name_something(tmp_path, capsys):
    assert "0 is not at least 1" in refused(["bench", "elasticity", "--jobs", "0"], capsys)
    assert main(["bench", "elasticity", "--suite", "broad", "--policies", " , ", "--no-docs"]) == 2
    assert "name at least one of" in capsys.readouterr().err
    assert main(["bench", "elasticity", "--write-traces", str(tmp_path / "t"), "--traces", str(tmp_path)]) == 2
    assert "give it alone" in capsys.readouterr().out and not (tmp_path / "t").exists()
    assert main(["bench", "elasticity", "--write-traces", str(tmp_path / "t"), "--json", str(tmp_path / "r.json")]) == 2
    assert "(not with --json)" in capsys.readouterr().out and not (tmp_path / "t").exists()


def test_train_rl_refuses_what_it_cannot_do_before_training(tmp_path, capsys):
    assert "does not exist" in refused(["train-rl", "--out", str(tmp_path / "no" / "w.json")], capsys)
    assert "0 is not at least 1" in refused(["train-rl", "--iterations", "0"], capsys)
    assert main(["train-rl", "--elite", "5", "--population", "3", "--out", str(tmp_path / "w.json")]) == 2
    assert "--elite 5 is more than --population 3" in capsys.readouterr().out
    assert main(["train-rl", "--spread", "0", "--out", str(tmp_path / "w.json")]) == 2
    assert main(["train-rl", "--spread", "inf", "--out", str(tmp_path / "w.json")]) == 2
    assert "positive standard deviation" in capsys.readouterr().out
