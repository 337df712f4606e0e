# SPDX-License-Identifier: LGPL-2.1-or-later
"""The gst-launch-1.0 examples of the elements' documentation blocks.

Extracts every `|[ ... ]|` example of the `SECTION:element-*` comments in
gst/**/*.c, and the peers the prose names in backquotes, so tests and
the cache generator read the same examples the docs show."""
import glob
import os
import re
import shlex

# gtk-doc blocks, as hotdoc reads them: '/**' then ' * SECTION:element-NAME'
_SECTION = re.compile(r'/\*\*\n\s*\*\s*SECTION:element-(\S+)\n(.*?)\*/', re.S)


def _strip(comment):
    return '\n'.join(re.sub(r'^\s*\* ?', '', line) for line in comment.split('\n'))


def _commands(text):
    """gst-launch-1.0 command lines in TEXT, backslash continuations joined."""
    text = re.sub(r'\\\n\s*', ' ', text)
    return [line.strip() for line in text.split('\n')
            if line.strip().startswith('gst-launch-1.0 ')]


def doc_blocks(source_root):
    """{element: doc text} for every element documentation block."""
    blocks = {}
    for path in sorted(glob.glob(os.path.join(source_root, 'gst', '**', '*.c'),
                                 recursive=True)):
        with open(path, encoding='utf-8') as f:
            text = f.read()
        for m in _SECTION.finditer(text):
            blocks[m.group(1)] = _strip(m.group(2))
    return blocks


def examples(source_root):
    """{element: {'blocks': [[cmd, ...], ...], 'prose': [cmd, ...]}}.

    blocks: the commands of each |[ ]| block, in order; prose: the
    `gst-launch-1.0 ...` peers quoted in the text around them."""
    out = {}
    for element, doc in doc_blocks(source_root).items():
        blocks = [_commands(b) for b in re.findall(r'\|\[\n(.*?)\n\]\|', doc, re.S)]
        flat = re.sub(r'\s*\n\s*', ' ', re.sub(r'\|\[\n.*?\n\]\|', ' ', doc, flags=re.S))
        prose = [c.strip() for c in re.findall(r'`(gst-launch-1\.0 [^`]*)`', flat)]
        out[element] = {'blocks': blocks, 'prose': prose}
    return out


def argv(command, substitutions):
    """COMMAND as an argv, each whole token in SUBSTITUTIONS replaced."""
    return [substitutions.get(tok, tok) for tok in shlex.split(command)]
