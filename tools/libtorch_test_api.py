#!/usr/bin/env python3
"""Measures how much of LibTorch 1.13's own C++ API test suite ports to graft (issue 32).

What it does, for each of the 17 test files of graft's scope (FILES below):
  1. ports test/cpp/api and test/cpp/common with tools/port-from-libtorch.sh, unedited;
  2. splits the ported file into top-level items (TEST/TEST_F blocks, and the helpers between
     them), with the two support headers inlined ahead of them as items of their own;
  3. compiles the file against an installed graft (find_package(graft)), drops every item a
     compiler error points at (the error's own line, or, for an error inside graft's headers, the
     test file's line that instantiated it), and compiles again until the file compiles and links;
     a dropped item is blanked line for line, so line numbers stay put across rounds;
  4. runs each surviving TEST block in a process of its own (a crash or a hang fails that block
     only) and classifies a failure as "message only" when every failed assertion is
     ASSERT_THROWS_WITH's substring check.
Blocks named *_CUDA or *_MultiCUDA are left out (graft has no CUDA device).

Usage:
  tools/libtorch_test_api.py --pytorch PYTORCH_SRC --graft-prefix PREFIX --work DIR [--files a,b]
PYTORCH_SRC is the unpacked source (Debian: `apt-get source pytorch`, or the .orig tarball), PREFIX a
`cmake --install` of graft. Prints one line per file and the totals; writes DIR/results.json with
every block's outcome. The test sources are not part of graft: they are read from PYTORCH_SRC.
"""
import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

FILES = ["autograd", "dataloader", "functional", "grad_mode", "inference_mode", "init", "module",
         "moduledict", "modulelist", "modules", "nn_utils", "optim", "ordered_dict", "sequential",
         "serialize", "tensor", "tensor_options"]
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def split_items(text):
    """Top-level items of a C++ file as (first_line, last_line, kind, name), 1-based, inclusive.

    kind: 'test' (TEST/TEST_F; name Suite.Name), 'pp' (a preprocessor line, continuations
    included), 'ns' (a namespace's opening or closing line: kept, never dropped) or 'code'.
    A small lexer: strings, raw strings, character literals and comments do not count braces."""
    items = []
    lines = text.split("\n")
    i, n = 0, len(text)
    line = 1
    depth = 0
    start = None          # offset where the current item began (first non-blank)
    start_line = None
    ns_stack = []         # depths at which a namespace was opened
    paren = 0

    def emit(end_line, kind=None):
        nonlocal start, start_line
        body = text[start:i + 1] if start is not None else ""
        if kind is None:
            m = re.match(r"\s*(TEST|TEST_F)\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)", body)
            kind, name = ("test", f"{m.group(2)}.{m.group(3)}") if m else ("code", "")
        else:
            name = ""
        items.append((start_line, end_line, kind, name))
        start = None

    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            continue
        if c in " \t\r":
            i += 1
            continue
        # comments
        if text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            line += text.count("\n", i, j)
            i = j
            continue
        if start is None and depth == len(ns_stack) and paren == 0:
            # a preprocessor line at item level
            if c == "#":
                j = i
                sl = line
                while True:
                    k = text.find("\n", j)
                    if k < 0:
                        k = n
                        break
                    if text[k - 1] == "\\":
                        j = k + 1
                        line += 1
                        continue
                    break
                items.append((sl, line, "pp", ""))
                i = k
                continue
            m = re.compile(r"namespace(\s+[\w:]+)?\s*\{").match(text, i)
            if m:
                line += text.count("\n", i, m.end())
                items.append((line, line, "ns", ""))
                ns_stack.append(depth)
                depth += 1
                i = m.end()
                continue
            if c == "}" and ns_stack and ns_stack[-1] == depth - 1:
                ns_stack.pop()
                depth -= 1
                items.append((line, line, "ns", ""))
                i += 1
                continue
            start, start_line = i, line
        # raw string R"delim( ... )delim"
        m = re.compile(r'(?:u8|u|U|L)?R"([^(\s]*)\(').match(text, i)
        if m and (i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")):
            close = ")" + m.group(1) + '"'
            j = text.find(close, m.end())
            j = n if j < 0 else j + len(close)
            line += text.count("\n", i, j)
            i = j
            continue
        if c == '"' or (c == "'" and not (i > 0 and text[i - 1].isalnum())):
            q = c
            j = i + 1
            while j < n and text[j] != q:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        if c == "(":
            paren += 1
        elif c == ")":
            paren -= 1
        elif c == "{":
            depth += 1
        elif c == "}":
            depth -= 1
            if depth == len(ns_stack) and paren == 0:
                # a function body or class closes; a class needs its ';'
                j = i + 1
                while j < n and text[j] in " \t":
                    j += 1
                if j < n and text[j] == ";":
                    i = j
                emit(line)
        elif c == ";" and depth == len(ns_stack) and paren == 0:
            emit(line)
        i += 1
    return items


def port(pytorch, work):
    for sub in ("api", "common"):
        subprocess.run(["bash", os.path.join(HERE, "port-from-libtorch.sh"),
                        os.path.join(pytorch, "test", "cpp", sub),
                        os.path.join(work, "src", "test", "cpp", sub)], check=True)


def compose(work, name):
    """The file to compile: common/support.h, api/support.h, api/support.cpp (the definition of a
    static member the header declares) and NAME.cpp, concatenated, with the
    includes of the two support headers removed. Returns (text, items) where items carry their
    origin file."""
    parts = []
    for rel in ("common/support.h", "api/support.h", "api/support.cpp", f"api/{name}.cpp"):
        with open(os.path.join(work, "src", "test", "cpp", rel)) as f:
            body = f.read()
        body = re.sub(r"^\s*#\s*pragma\s+once.*$", "", body, flags=re.M)
        body = re.sub(r"^\s*#\s*include\s*<test/cpp/(api|common)/support\.h>.*$", "", body, flags=re.M)
        parts.append((rel, body))
    text, items, offset = "", [], 0
    for rel, body in parts:
        if not body.endswith("\n"):
            body += "\n"
        for (a, b, kind, nm) in split_items(body):
            items.append({"first": a + offset, "last": b + offset, "kind": kind, "name": nm, "origin": rel})
        text += body
        offset += body.count("\n")
    return text, items


def write_project(work, names):
    proj = os.path.join(work, "proj")
    os.makedirs(os.path.join(proj, "gen"), exist_ok=True)
    with open(os.path.join(proj, "main.cpp"), "w") as f:
        f.write('#include <gtest/gtest.h>\n'
                'int main(int argc, char** argv) {\n'
                '  ::testing::InitGoogleTest(&argc, argv);\n'
                '  return RUN_ALL_TESTS();\n}\n')
    cm = ["cmake_minimum_required(VERSION 3.20)", "project(libtorch_test_api CXX)",
          "set(CMAKE_CXX_STANDARD 20)", "set(CMAKE_CXX_STANDARD_REQUIRED ON)",
          "set(CMAKE_EXPORT_COMPILE_COMMANDS ON)", "find_package(graft REQUIRED)",
          "find_package(GTest REQUIRED)", "add_library(tmain OBJECT main.cpp)",
          "target_link_libraries(tmain PRIVATE GTest::gtest)"]
    for nm in names:
        gen = os.path.join(proj, "gen", f"{nm}.cpp")
        if not os.path.exists(gen):
            open(gen, "w").close()
        cm += [f"add_executable(t_{nm} gen/{nm}.cpp $<TARGET_OBJECTS:tmain>)",
               f"target_include_directories(t_{nm} PRIVATE {os.path.join(work, 'src')})",
               f"target_link_libraries(t_{nm} PRIVATE graft::graft GTest::gtest)"]
    with open(os.path.join(proj, "CMakeLists.txt"), "w") as f:
        f.write("\n".join(cm) + "\n")
    return proj


LOC = re.compile(r"^(?P<file>[^:\s]+):(?P<line>\d+):(?:\d+:)?\s*(?P<rest>.*)$")


def attribute(output, gen_path, is_macro_line):
    """Line numbers of the composed file that the compiler's (or linker's) errors point at.

    An error inside a macro defined in the file (its #define line) is blamed on the use that
    expanded it ("in expansion of macro", printed after the error); an error inside graft's headers
    on the test file's line that instantiated the template ("required from here", printed before)."""
    gen_real = os.path.realpath(gen_path)
    diags = []  # (in_gen, line, is_error, is_expansion)
    for raw in output.splitlines():
        m = LOC.match(raw.strip())
        if not m:
            continue
        f, ln, rest = m.group("file"), int(m.group("line")), m.group("rest")
        in_gen = os.path.realpath(f) == gen_real if os.path.exists(f) else f.endswith("/" + os.path.basename(gen_path))
        is_error = rest.startswith("error:") or "undefined reference" in rest or rest.startswith("fatal error:")
        diags.append((in_gen, ln, is_error, "in expansion of macro" in rest, rest))
    bad = {}
    context = []   # lines of the composed file mentioned since the last error
    for k, (in_gen, ln, is_error, _, text) in enumerate(diags):
        if not is_error:
            if in_gen:
                context.append(ln)
            continue
        target = ln if in_gen else (context[-1] if context else None)
        if target is None:
            # nothing before it: the notes after it ("because the following virtual functions are
            # pure within X", "candidate: ...") may name the test file's line
            for in_g2, ln2, err2, _, _ in diags[k + 1:]:
                if err2:
                    break
                if in_g2:
                    target = ln2
                    break
        if target is None or is_macro_line(target):
            # the expansion notes that follow this error, up to the next error
            uses = []
            for in_g2, ln2, err2, exp2, _ in diags[k + 1:]:
                if err2:
                    break
                if in_g2 and exp2 and not is_macro_line(ln2):
                    uses.append(ln2)
            if uses:
                target = uses[-1]
            elif target is not None and is_macro_line(target):
                target = None  # never drop a #define for an error no use of it is named for
        if target is not None and target not in bad:
            bad[target] = text
        context = []
    return bad


def attribute_link(output, text, items):
    """The linker names the function an undefined reference is in ("in function `Suite_Name_Test::
    TestBody()'", "in function `helper(...)'"): the item that defines it, by its first line."""
    bad = {}
    func = None
    lines = text.split("\n")
    for raw in output.splitlines():
        m = re.search(r"in function [`'](.*)'", raw)
        if m:
            func = m.group(1)
            continue
        if "undefined reference" not in raw or func is None:
            continue
        target = None
        t = re.match(r"(\w+)_Test::TestBody", func)
        for it in items:
            if it["kind"] == "test" and t and it["name"].replace(".", "_") == t.group(1):
                target = it["first"]
                break
        if target is None:
            ident = re.match(r"(?:[\w:]*::)?(\w+)\s*(?:\(|$)", func.split("(")[0].split("::")[-1] + "(")
            name = ident.group(1) if ident else None
            for it in items:
                if it["kind"] in ("code", "test") and name and any(
                        re.search(r"\b" + re.escape(name) + r"\b", lines[ln - 1])
                        for ln in range(it["first"], it["last"] + 1)):
                    target = it["first"]
                    break
        if target is not None and target not in bad:
            bad[target] = "undefined reference in " + func + ": " + raw.split("undefined reference")[-1].strip()
    return bad


def item_of(items, ln):
    for k, it in enumerate(items):
        if it["first"] <= ln <= it["last"]:
            return k
    return None


def syntax_command(work, name):
    """The compiler's command for gen/NAME.cpp from CMake's compile_commands.json, as a syntax check."""
    with open(os.path.join(work, "build", "compile_commands.json")) as f:
        for entry in json.load(f):
            if entry["file"].endswith(f"gen/{name}.cpp"):
                cmd = shlex.split(entry["command"])
                # drop "-o OBJ" and "-c": only the diagnostics are wanted
                out, skip = [], False
                for c in cmd:
                    if skip:
                        skip = False
                        continue
                    if c == "-o":
                        skip = True
                        continue
                    if c == "-c":
                        continue
                    out.append(c)
                return out + ["-fsyntax-only"], entry["directory"]
    raise SystemExit(f"no compile command for gen/{name}.cpp")


def compile_file(work, proj, name, text, items, log):
    """Drops items until gen/NAME.cpp compiles and links. Returns (dropped {item: why}, ok)."""
    lines = text.split("\n")
    dropped = {}
    for k, it in enumerate(items):
        if it["kind"] == "test" and re.search(r"_(Multi)?CUDA$", it["name"]):
            dropped[k] = "cuda"
    gen = os.path.join(proj, "gen", f"{name}.cpp")
    build = os.path.join(work, "build")
    cmd, cwd = syntax_command(work, name)
    is_macro_line = lambda ln: (k := item_of(items, ln)) is not None and items[k]["kind"] == "pp"

    def attempt(blank, label, full=False):
        out = list(lines)
        for k in blank:
            for ln in range(items[k]["first"], items[k]["last"] + 1):
                out[ln - 1] = ""
        with open(gen, "w") as f:
            f.write("\n".join(out))
        if full:
            r = subprocess.run(["cmake", "--build", build, "--target", f"t_{name}", "--", "-k"],
                               capture_output=True, text=True)
        else:
            r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
        log.write(f"=== {name} {label}\n{r.stdout}{r.stderr}\n")
        return r.returncode == 0, r.stdout + r.stderr

    for rnd in range(1, 60):
        ok, output = attempt(dropped, f"round {rnd}")
        if ok:
            ok, output = attempt(dropped, f"round {rnd} (build and link)", full=True)
            if ok:
                return dropped, True
        bad = attribute(output, gen, is_macro_line)
        bad.update(attribute_link(output, text, items))
        new = {}
        for ln in sorted(bad):
            k = item_of(items, ln)
            if k is not None and items[k]["kind"] != "ns" and k not in dropped and k not in new:
                new[k] = bad[ln]
        if not new:
            # An error no line of the file is named for (g++ reports a template instantiated at
            # the end of the file "required from" graft's header alone): find one block that
            # causes it by halving the live TEST blocks, each half blanked in turn.
            cands = [k for k, it in enumerate(items) if it["kind"] == "test" and k not in dropped]
            blanked = set(dropped)
            while len(cands) > 1:
                half, rest = cands[:len(cands) // 2], cands[len(cands) // 2:]
                ok, _ = attempt(blanked | set(half), f"round {rnd} halving {len(cands)}")
                # compiles without `half`: a culprit is in it; else one is in `rest` (half stays out)
                if ok:
                    blanked |= set(rest)
                    cands = half
                else:
                    blanked |= set(half)
                    cands = rest
            if not cands:
                return dropped, False
            err = re.search(r"error: (.*)", output)
            new = {cands[0]: "error: (found by halving) " + (err.group(1) if err else "")}
        for k, why in new.items():
            dropped[k] = f"round {rnd}: {why}"
    return dropped, False


def run_tests(work, name, tests, jobs):
    exe = os.path.join(work, "build", f"t_{name}")
    def one(t):
        try:
            r = subprocess.run([exe, f"--gtest_filter={t}"], capture_output=True, text=True, timeout=120,
                               cwd=os.path.join(work, "run"))
        except subprocess.TimeoutExpired:
            return t, "timeout", ""
        out = r.stdout + r.stderr
        if r.returncode == 0 and "[  PASSED  ] 1 test" in out:
            return t, "pass", ""
        if r.returncode < 0:
            return t, "crash", out[-2000:]
        fails = re.findall(r"^.*(?:Failure|error:).*$", out, flags=re.M)
        msgs = out.count("did not contain expected substring")
        failures = out.count("Failure\n")
        if msgs and msgs == failures:
            return t, "message", out[-2000:]
        return t, "fail", out[-2000:]
    with ThreadPoolExecutor(jobs) as ex:
        return list(ex.map(one, tests))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pytorch", required=True)
    ap.add_argument("--graft-prefix", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--files", default=",".join(FILES))
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--build-type", default="Release")
    a = ap.parse_args()
    names = a.files.split(",")
    work = os.path.abspath(a.work)
    os.makedirs(os.path.join(work, "run"), exist_ok=True)
    port(a.pytorch, work)
    proj = write_project(work, names)
    subprocess.run(["cmake", "-S", proj, "-B", os.path.join(work, "build"), f"-DCMAKE_PREFIX_PATH={a.graft_prefix}",
                    f"-DCMAKE_BUILD_TYPE={a.build_type}", "-DCMAKE_CXX_FLAGS=-g1 -ftemplate-backtrace-limit=0"],
                   check=True, capture_output=True)
    results = {}
    tot = {"blocks": 0, "compiled": 0, "pass": 0, "message": 0}
    with open(os.path.join(work, "build.log"), "w") as log:
        for name in names:
            text, items = compose(work, name)
            dropped, ok = compile_file(work, proj, name, text, items, log)
            tests = [it["name"] for k, it in enumerate(items) if it["kind"] == "test" and dropped.get(k) != "cuda"]
            live = [it["name"] for k, it in enumerate(items) if it["kind"] == "test" and k not in dropped] if ok else []
            outcomes = run_tests(work, name, live, a.jobs) if live else []
            per = {it["name"]: "no-compile: " + dropped.get(k, "")
                   for k, it in enumerate(items) if it["kind"] == "test" and dropped.get(k) != "cuda"}
            for t, res, _ in outcomes:
                per[t] = res
            results[name] = {"blocks": per, "dropped_helpers": {
                items[k]["origin"] + ":" + str(items[k]["first"]): dropped[k] for k in dropped
                if items[k]["kind"] != "test"}, "compiled_ok": ok,
                "failures": {t: out for t, r, out in outcomes if r != "pass"}}
            c = len(live)
            p = sum(1 for _, r, _ in outcomes if r == "pass")
            mo = sum(1 for _, r, _ in outcomes if r == "message")
            tot["blocks"] += len(tests)
            tot["compiled"] += c
            tot["pass"] += p
            tot["message"] += mo
            print(f"{name:15s} blocks {len(tests):4d}  compile {c:4d}  pass {p:4d}  message-only {mo:3d}", flush=True)
    with open(os.path.join(work, "results.json"), "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
    b, c, p = tot["blocks"], tot["compiled"], tot["pass"]
    print(f"TOTAL blocks {b}  compile {c} ({100 * c / max(b, 1):.1f}%)  pass {p} "
          f"({100 * p / max(c, 1):.1f}% of compiled)  message-only failures {tot['message']}")


if __name__ == "__main__":
    main()
