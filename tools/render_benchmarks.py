"""Render benchmark output as pages: docs/benchmarks.md and the README's results table.

Every benchmark under tools/ writes one JSON record through ``bench_output.write``
(benchmarks/NAME.json: the figures, the command, the machine, the package versions, the
date). This tool reads every record in the folder and writes

- ``docs/benchmarks.md``: one section per record, with what the benchmark compares (the
  first paragraph of its tool's docstring), the command that made it, the machine and
  versions, the rows of its tool's ``headline(figures)``, and every figure as tables,
  folded;
- the README's results table, between the lines ``<!-- results:start -->`` and
  ``<!-- results:end -->``: the rows each tool's ``headline(figures)`` picks out (a
  benchmark whose tool has no such function adds none), with the machine they were
  measured on.

No figure is typed by hand in either page: run a benchmark, then this tool.

Example:
    python tools/bench_defaults.py && python tools/render_benchmarks.py
"""

import argparse
import glob
import importlib
import json
import math
import os
import sys

TOOLS = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(TOOLS)
if TOOLS not in sys.path:
    sys.path.insert(0, TOOLS)

import bench_output  # noqa: E402

START, END = "<!-- results:start -->", "<!-- results:end -->"


def load_records(folder):
    """Every benchmark record (``*.json``) in ``folder``, sorted by benchmark name."""
    records = []
    for path in sorted(glob.glob(os.path.join(folder, "*.json"))):
        with open(path) as fh:
            record = json.load(fh)
        missing = {"benchmark", "command", "machine", "versions", "figures"} - set(record)
        if missing:
            raise ValueError(f"{path}: not a benchmark record (no {', '.join(sorted(missing))})")
        records.append(record)
    return sorted(records, key=lambda r: r["benchmark"])


def tool_module(record):
    """The module of the tool that wrote ``record`` (its command's script), or None."""
    words = record["command"].split()
    script = next((w for w in words if w.endswith(".py")), None)
    if script is None or not os.path.exists(os.path.join(TOOLS, os.path.basename(script))):
        return None
    return importlib.import_module(os.path.basename(script)[:-3])


def describe(module):
    """The first paragraph of a tool's docstring, on one line."""
    if module is None or not module.__doc__:
        return ""
    return " ".join(module.__doc__.strip().split("\n\n")[0].split())


def cell(value):
    """A figure as table text: 4 significant digits, yes/no, blank for None."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value) or math.isinf(value):
            return str(value)
        return f"{value:.4g}"
    if isinstance(value, (list, tuple)):
        return ", ".join(cell(v) for v in value)
    return str(value).replace("|", "\\|")


def table(rows):
    """Markdown table of a list of dicts; the columns are the keys in first-seen order."""
    columns = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    lines += ["| " + " | ".join(cell(row.get(c)) for c in columns) + " |" for row in rows]
    return lines


def is_rows(value):
    return isinstance(value, list) and value and all(isinstance(v, dict) for v in value)


def figure_tables(figures, path=()):
    """Markdown for ``figures``: a list of dicts is one table; a dict's scalar entries are
    one table of name and value, and its other entries tables of their own, each under its
    path in the record in bold (no headings: the page's sections are the benchmarks)."""
    lines = [f"**{' / '.join(path)}**", ""] if path else []
    if is_rows(figures) and all(not isinstance(v, (dict, list)) or not v
                                for row in figures for v in row.values()):
        return lines + table(figures) + [""]
    if isinstance(figures, list):
        figures = {str(i): value for i, value in enumerate(figures)}
    if not isinstance(figures, dict):
        return lines + [cell(figures), ""]
    scalars = [{"": key, "value": value} for key, value in figures.items()
               if not isinstance(value, (dict, list))]
    if scalars:
        lines += table(scalars) + [""]
    nested = {k: v for k, v in figures.items() if isinstance(v, (dict, list))}
    if nested and all(isinstance(v, dict) and all(not isinstance(x, (dict, list))
                                                  for x in v.values())
                      for v in nested.values()):  # a dict of rows: one table, keyed
        return lines + table([{"": k, **v} for k, v in nested.items()]) + [""]
    for key, value in nested.items():
        lines += figure_tables(value, path + (str(key),))
    return lines


def machine_line(record):
    m, v = record["machine"], record["versions"]
    memory = "" if m.get("memory_gib") is None else f", {m['memory_gib']:g} GiB"
    installed = ", ".join(f"{name} {version}" for name, version in v.items() if version)
    return (f"{m.get('cpu')}, {m.get('cores')} cores{memory}, {m.get('os')}, "
            f"Python {m.get('python')}; {installed}")


def render_page(records):
    """docs/benchmarks.md's text."""
    lines = ["# Benchmark results", "",
             "Rendered by `tools/render_benchmarks.py` from the JSON records in `benchmarks/`, "
             "which the benchmarks under `tools/` write; how to run them and what they "
             "compare: [Performance](PERFORMANCE.md).", ""]
    if not records:
        lines += ["No benchmark record yet: run a benchmark, then "
                  "`python tools/render_benchmarks.py`.", ""]
    for record in records:
        module = tool_module(record)
        lines += [f"## {record['benchmark']}", ""]
        if describe(module):
            lines += [describe(module), ""]
        lines += ["```sh", record["command"], "```", "",
                  f"Machine and versions: {machine_line(record)}.", ""]
        if module is not None and hasattr(module, "headline"):
            lines += table([{"what": row["what"], "result": row["result"]}
                            for row in module.headline(record["figures"])]) + [""]
        # the whole record, folded: what the summary above is taken from
        lines += ["<details>", f"<summary>Every figure (benchmarks/{record['benchmark']}.json)"
                  "</summary>", ""] + figure_tables(record["figures"]) + ["</details>", ""]
    return "\n".join(lines).rstrip() + "\n"


def headline_rows(records):
    """The rows of the README's results table: each tool's ``headline(figures)``, with the
    machine and versions it was measured with."""
    rows = []
    for record in records:
        module = tool_module(record)
        if module is not None and hasattr(module, "headline"):
            for row in module.headline(record["figures"]):
                rows.append({"benchmark": record["benchmark"], **row,
                             "machine": machine_line(record)})
    return rows


def render_readme_table(records):
    """The text between the README's markers (without them)."""
    rows = headline_rows(records)
    if not rows:
        return ("No benchmark record yet: run a benchmark, then "
                "`python tools/render_benchmarks.py`.")
    machines = []
    for row in rows:
        if row["machine"] not in machines:
            machines.append(row["machine"])
    several = len(machines) > 1  # then each row names its machine by number
    lines = ["| benchmark | what | result |", "|---|---|---|"]
    for row in rows:
        mark = f" (machine {machines.index(row['machine']) + 1})" if several else ""
        lines.append(f"| {row['benchmark']}{mark} | {cell(row['what'])} | "
                     f"{cell(row['result'])} |")
    lines.append("")
    for i, machine in enumerate(machines):
        lines.append(f"{f'Machine {i + 1}' if several else 'Measured on'}: {machine}.")
    lines.append("Every figure, with its command: [docs/benchmarks.md](docs/benchmarks.md).")
    return "\n".join(lines)


def replace_between_markers(text, body, where="README.md"):
    """``text`` with the part between the results markers replaced by ``body``."""
    if text.count(START) != 1 or text.count(END) != 1 or text.index(START) > text.index(END):
        raise ValueError(f"{where}: needs one line {START} and, after it, one line {END}")
    head, rest = text.split(START)
    _, tail = rest.split(END)
    return f"{head}{START}\n{body}\n{END}{tail}"


def write_text(path, text):
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as fh:
        fh.write(text)
    os.replace(tmp, path)


PAGE = os.path.join(ROOT, "docs", "benchmarks.md")
README = os.path.join(ROOT, "README.md")


def render(results=bench_output.RESULTS_DIR, page=PAGE, readme=README):
    """Write ``page`` and the results table of ``readme`` from the records in ``results``."""
    records = load_records(results)
    with open(readme) as fh:
        text = replace_between_markers(fh.read(), render_readme_table(records), readme)
    write_text(page, render_page(records))
    write_text(readme, text)
    return records


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--results", default=bench_output.RESULTS_DIR,
                   help="folder of benchmark records (default %(default)s)")
    p.add_argument("--page", default=PAGE, help="page to write (default %(default)s)")
    p.add_argument("--readme", default=README,
                   help="README whose results table to replace (default %(default)s)")
    args = p.parse_args(argv)
    records = render(args.results, args.page, args.readme)
    print(f"rendered {len(records)} benchmark record(s) into {args.page} and {args.readme}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
