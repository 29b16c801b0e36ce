#!/usr/bin/env python3
"""Language cases for Plumb's Jinja subset, with the output Python jinja2 gives in Hugging Face's configuration.

  --write   renders every case with jinja2 and writes tests/fixtures/templates/language_cases.json
  --check   renders every case again and fails if the committed file differs (run in CI when jinja2 is installed)

The GoogleTest suite (tests/text/template/test_language.cpp) holds Plumb to the committed file.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from template_peer_python import make_environment  # noqa: E402

MESSAGES = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"}]
PEOPLE = [{"name": "Ann", "age": 31, "admin": True}, {"name": "bob", "age": 25},
          {"name": "Cy", "age": 31, "admin": False}]

CASES = [
    # Text, output, comments and whitespace control (trim_blocks and lstrip_blocks are on).
    ("text", "plain text\n", {}),
    ("output", "a{{ x }}b", {"x": 5}),
    ("comment", "a{# note #}b", {}),
    ("trim-blocks", "{% if true %}\nyes\n{% endif %}\nend", {}),
    ("lstrip-blocks", "  {% if true %}\n  yes\n  {% endif %}\nend", {}),
    ("lstrip-not-variables", "  {{ 1 }}\n", {}),
    ("minus-both-sides", "a  \n  {{- 1 -}}  \n  b", {}),
    ("minus-block", "x\n  {%- if true -%}\n  y\n  {%- endif %}\nz", {}),
    ("plus-keeps", "  {%+ if true %}a{% endif +%}\nb", {}),
    ("comment-minus", "a \n {#- c -#} \n b", {}),
    ("comment-trim-line", "a\n{# c #}\nb", {}),
    ("raw", "{% raw %}{{ not evaluated }}{% endraw %}", {}),
    ("crlf", "a\r\n{% if true %}\r\nb\r\n{% endif %}\r\n", {}),
    ("trailing-newline", "a\n", {}),
    # Literals.
    ("string-escapes", "{{ 'a\\nb\\tc\\x41\\u00e9\\101\\\\\\'' }}", {}),
    ("unknown-escape-kept", "{{ 'a\\db' }}", {}),
    ("double-quotes", '{{ "it\'s" }}', {}),
    ("adjacent-strings", "{{ 'a' 'b' \"c\" }}", {}),
    ("numbers", "{{ 1 }} {{ 1.5 }} {{ 1_000 }} {{ 2e3 }} {{ 1.0 }} {{ 0.1 + 0.2 }}", {}),
    ("float-repr", "{{ 1e-5 }} {{ 1e16 }} {{ 123456789.0 }} {{ 1/3 }} {{ -0.0 }} {{ 1e22 }}", {}),
    ("list-repr", "{{ [1, 'a', none, true, 1.5, [2]] }}", {}),
    ("dict-repr", "{{ {'a': 1, 'b': 'it\\'s', 'c': [none]} }}", {}),
    ("tuple-repr", "{{ (1,) }} {{ (1, 2) }} {{ () }}", {}),
    ("constants", "{{ true }} {{ false }} {{ none }} {{ True }} {{ None }}", {}),
    ("string-repr-quotes", "{{ ['a\"b', \"c'd\", 'e\\'f\"g', 'new\\nline'] }}", {}),
    # Variables, attributes, items, slicing.
    ("attribute-and-item", "{{ m.role }} {{ m['content'] }} {{ ms[1].content }} {{ ms[-1]['role'] }}",
     {"m": MESSAGES[0], "ms": MESSAGES}),
    ("dot-index", "{{ ms.0.role }}", {"ms": MESSAGES}),
    ("missing-prints-empty", "[{{ nothing }}][{{ m.missing }}][{{ ms[9] }}]", {"m": MESSAGES[0], "ms": MESSAGES}),
    ("dict-method-before-key", "{{ d.items is defined }} {{ d['items'] }}", {"d": {"items": "key"}}),
    ("slices", "{{ s[1:3] }} {{ s[::-1] }} {{ s[-2:] }} {{ s[:-1] }} {{ s[::2] }} {{ s[5:1:-2] }}", {"s": "abcdefg"}),
    ("list-slices", "{{ l[1:] }} {{ l[::-1] }} {{ l[-2::-1] }} {{ l[:0] }} {{ l[10:] }}", {"l": [1, 2, 3, 4]}),
    ("unicode-slices", "{{ s[1:3] }} {{ s|length }} {{ s[-1] }} {{ s[::-1] }}", {"s": "héllo🌍"}),
    # Arithmetic and operators.
    ("arithmetic", "{{ 7 + 3 }} {{ 7 - 10 }} {{ 7 * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} "
     "{{ -7 % 3 }} {{ 2 ** 10 }} {{ 2 ** -1 }} {{ 7.5 // 2 }} {{ -7.5 % 2 }}", {}),
    ("precedence", "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 2 ** 3 ** 2 }} {{ -2 ** 2 }} {{ 10 - 2 - 3 }}", {}),
    ("concat", "{{ 'a' ~ 1 ~ none ~ true ~ nothing ~ [1] }}", {}),
    ("string-ops", "{{ 'ab' + 'cd' }} {{ 'ab' * 3 }} {{ 2 * 'x' }} {{ [1] + [2] }} {{ [0] * 3 }}", {}),
    ("bool-arithmetic", "{{ true + 1 }} {{ true * 2.5 }}", {}),
    ("comparisons", "{{ 1 < 2 }} {{ 2 <= 1 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }} {{ 1 == 1.0 }} {{ 1 != '1' }} "
     "{{ 1 < 2 < 3 }} {{ 3 > 2 > 2 }} {{ none == none }} {{ [1, [2]] == [1, [2]] }} {{ {'a': 1} == {'a': 1} }}", {}),
    ("logic-values", "{{ 0 or 'x' }} {{ 'a' and 'b' }} {{ '' and 'b' }} [{{ none or '' }}] {{ not 0 }} "
     "{{ not [] }} {{ not 'a' == 'b' }}", {}),
    ("membership", "{{ 'b' in 'abc' }} {{ 2 in [1, 2] }} {{ 'k' in {'k': 1} }} {{ 'x' not in 'abc' }} "
     "{{ 'z' in nothing }} {{ not 'a' in 'abc' }}", {}),
    ("ternary", "{{ 'yes' if 1 else 'no' }} {{ 'yes' if 0 else 'no' }} [{{ 'only' if false }}] "
     "{{ 'a' if false else 'b' if true else 'c' }}", {}),
    # Statements.
    ("if-elif-else", "{% for n in [1, 2, 3] %}{% if n == 1 %}one{% elif n == 2 %}two{% else %}many{% endif %} "
     "{% endfor %}", {}),
    ("for-loop-vars", "{% for x in 'abc' %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
     "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}", {}),
    ("for-prev-next", "{% for x in [1, 2, 3] %}[{{ loop.previtem }}|{{ loop.nextitem }}]{{ loop.previtem is defined }}"
     "{% endfor %}", {}),
    ("for-cycle", "{% for x in range(5) %}{{ loop.cycle('a', 'b') }}{% endfor %}", {}),
    ("for-else", "{% for x in [] %}{{ x }}{% else %}empty{% endfor %}|{% for x in [1] %}{{ x }}{% else %}e"
     "{% endfor %}", {}),
    ("for-filter", "{% for x in range(10) if x % 3 == 0 %}{{ x }}{{ ',' if not loop.last }}{% endfor %}", {}),
    ("for-unpack", "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}{% for a, (b, c) in [(1, (2, 3))] %}"
     "{{ a }}{{ b }}{{ c }}{% endfor %}", {"d": {"x": 1, "y": [2]}}),
    ("for-dict-keys", "{% for k in d %}{{ k }}{% endfor %}", {"d": {"b": 1, "a": 2}}),
    ("for-undefined-empty", "{% for x in nothing %}{{ x }}{% else %}none{% endfor %}", {}),
    ("for-reversed-messages", "{% for m in ms[::-1] %}{{ m.role }}{{ loop.index0 }} {% endfor %}", {"ms": MESSAGES}),
    ("break-continue", "{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x > 4 %}{% break %}"
     "{% endif %}{{ x }}{% endfor %}", {}),
    ("nested-loops", "{% for a in [1, 2] %}{% for b in 'xy' %}{{ a }}{{ b }}{{ loop.index }}{% endfor %}"
     "({{ loop.index }}){% endfor %}", {}),
    ("loop-scope", "{% set x = 'outer' %}{% for i in [1] %}{% set x = 'inner' %}{{ x }}{% endfor %} {{ x }}", {}),
    ("loop-set-per-iteration", "{% for i in [1, 2] %}{% if i == 1 %}{% set y = 'set' %}{% endif %}[{{ y }}]"
     "{% endfor %}", {}),
    ("if-scope-leaks", "{% if true %}{% set x = 1 %}{% endif %}{{ x }}", {}),
    ("set-tuple", "{% set a, b = 1, 2 %}{{ a }}{{ b }}{% set c, d = 'xy' %}{{ c }}{{ d }}", {}),
    ("set-block", "{% set text %}Hello {{ name }}!{% endset %}[{{ text }}]", {"name": "Ann"}),
    ("set-block-filter", "{% set text | upper | trim %}  shout  {% endset %}[{{ text }}]", {}),
    ("namespace", "{% set ns = namespace(count=0, seen=[]) %}{% for x in [1, 2, 3] %}"
     "{% set ns.count = ns.count + x %}{% endfor %}{{ ns.count }} {{ ns.seen }}", {}),
    ("namespace-from-dict", "{% set ns = namespace({'a': 1}, b=2) %}{{ ns.a }}{{ ns.b }}{{ ns['a'] }}", {}),
    ("with", "{% with a = 1, b = 2 %}{{ a + b }}{% endwith %}[{{ a }}]", {}),
    ("generation-tag", "{% generation %}kept{% endgeneration %}", {}),
    ("macro-defaults", "{% macro greet(name, greeting='Hello', punct='!') %}{{ greeting }}, {{ name }}{{ punct }}"
     "{% endmacro %}{{ greet('Ann') }} {{ greet('Bob', punct='?') }} {{ greet(greeting='Hi', name='Cy') }}", {}),
    ("macro-default-uses-earlier", "{% macro f(a, b=a * 2) %}{{ a }},{{ b }}{% endmacro %}{{ f(3) }}", {}),
    ("macro-missing-arg", "{% macro f(a, b) %}[{{ b }}]{{ b is defined }}{% endmacro %}{{ f(1) }}", {}),
    ("macro-varargs-kwargs", "{% macro f(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ f(1, 2, 3, k=4) }}",
     {}),
    ("macro-recursion", "{% macro fact(n) %}{{ 1 if n <= 1 else n * fact(n - 1)|int }}{% endmacro %}{{ fact(6) }}", {}),
    ("macro-sees-globals", "{% set g = 'global' %}{% macro f() %}{{ g }}{% endmacro %}{{ f() }}", {}),
    ("macro-later-defined", "{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}B{% endmacro %}{{ a() }}", {}),
    ("macro-in-expression", "{% macro f(x) %} {{ x }} {% endmacro %}[{{ f(1) | trim }}]{% set v = f(2) %}"
     "[{{ v }}]{{ f(3) | length }}", {}),
    ("macro-namespace-mutation", "{% set ns = namespace(n=0) %}{% macro bump() %}{% set ns.n = ns.n + 1 %}"
     "{% endmacro %}{{ bump() }}{{ bump() }}{{ ns.n }}", {}),
    ("call-block", "{% macro box(title) %}[{{ title }}: {{ caller() }}]{% endmacro %}"
     "{% call box('note') %}inside{% endcall %}", {}),
    ("call-block-args", "{% macro each(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}"
     "{% call(item) each([1, 2]) %}<{{ item }}>{% endcall %}", {}),
    ("filter-block", "{% filter upper %}hello {{ name }}{% endfilter %}|{% filter replace('a', 'o') | title %}"
     "banana bread{% endfilter %}", {"name": "ann"}),
    # Tests.
    ("tests-types", "{% for v in values %}{{ v is string }}{{ v is number }}{{ v is integer }}{{ v is float }}"
     "{{ v is boolean }}{{ v is mapping }}{{ v is iterable }}{{ v is sequence }}{{ v is none }}|{% endfor %}",
     {"values": ["s", 1, 1.5, True, {"a": 1}, [1], None]}),
    ("tests-defined", "{{ x is defined }}{{ y is defined }}{{ y is undefined }}{{ x.z is defined }}"
     "{{ x is not none }}", {"x": {"a": 1}}),
    ("tests-numbers", "{{ 3 is odd }}{{ 4 is even }}{{ 9 is divisibleby 3 }}{{ 10 is divisibleby(3) }}"
     "{{ 2.0 is even }}", {}),
    ("tests-equal", "{{ 1 is eq 1 }}{{ 'a' is equalto 'b' }}{{ 1 is ne 2 }}{{ 3 is gt 2 }}{{ 1 is lt 0 }}"
     "{{ 2 is ge 2 }}{{ 2 is le 1 }}{{ 1 is in [1, 2] }}", {}),
    ("tests-true-false", "{{ true is true }}{{ 1 is true }}{{ false is false }}{{ 0 is false }}{{ none is sameas none }}",
     {}),
    ("tests-case", "{{ 'abc' is lower }}{{ 'ABC' is upper }}{{ 'aBc' is lower }}{{ '123' is lower }}", {}),
    ("tests-callable", "{{ range is callable }}{{ 'x'.upper is callable }}{{ 1 is callable }}", {}),
    ("tests-negated-chained", "{{ x is not string and x is not mapping }}", {"x": [1]}),
    # Filters.
    ("filter-trim", "[{{ '  a b  ' | trim }}][{{ 'xxaxx' | trim('x') }}][{{ none | trim }}][{{ nothing | trim }}]", {}),
    ("filter-case", "{{ 'hello wORLD' | upper }} {{ 'HeLLo' | lower }} {{ 'hello big-world (x)' | title }} "
     "{{ 'hELLO wORLD' | capitalize }}", {}),
    ("filter-replace", "{{ 'aaa' | replace('a', 'b') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ 'abc' | replace('', '-') }}",
     {}),
    ("filter-length", "{{ 'héllo' | length }} {{ [1, 2] | length }} {{ {'a': 1} | length }} {{ nothing | length }} "
     "{{ [1, 2, 3] | count }}", {}),
    ("filter-join", "{{ ['a', 'b'] | join }} {{ [1, 2, 3] | join(', ') }} {{ people | join('/', attribute='name') }} "
     "{{ 'abc' | join('.') }}", {"people": PEOPLE}),
    ("filter-default", "{{ nothing | default('d') }} {{ none | default('d') }} {{ '' | default('d', true) }} "
     "{{ 0 | d('zero', boolean=true) }} {{ 'x' | default('d') }} [{{ nothing | default }}]", {}),
    ("filter-first-last-list", "{{ [3, 1, 2] | first }} {{ [3, 1, 2] | last }} {{ 'abc' | list }} {{ 'abc' | first }} "
     "[{{ [] | first }}] {{ {'k': 1} | list }}", {}),
    ("filter-string-int-float", "{{ 1.5 | string }} {{ [1] | string }} {{ '42' | int + 1 }} {{ '3.7' | int }} "
     "{{ 'x' | int }} {{ 'x' | int(-1) }} {{ 3.9 | int }} {{ '2.5' | float * 2 }} {{ 'no' | float }} "
     "{{ true | int }} {{ ' 12 ' | int }}", {}),
    ("filter-abs-round", "{{ -3 | abs }} {{ -2.5 | abs }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} "
     "{{ 2.1 | round(0, 'ceil') }} {{ 2.9 | round(method='floor') }} {{ 7 | round }} {{ 1234.5 | round(-2) }}", {}),
    ("filter-unique-sort-reverse", "{{ [3, 1, 2, 1] | unique | list }} {{ ['b', 'A', 'a', 'B'] | unique | list }} "
     "{{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }} {{ [1, 3, 2] | sort(reverse=true) }} "
     "{{ [1, 2, 3] | reverse | list }} {{ 'abc' | reverse }}", {}),
    ("filter-sort-attribute", "{{ people | sort(attribute='age') | map(attribute='name') | join(',') }} "
     "{{ people | sort(attribute='name') | map(attribute='name') | join(',') }} "
     "{{ people | sort(attribute='age', reverse=true) | map(attribute='name') | join(',') }}", {"people": PEOPLE}),
    ("filter-map", "{{ people | map(attribute='name') | list }} {{ people | map(attribute='admin', default='?') | list }} "
     "{{ ['a', 'b'] | map('upper') | list }} {{ [' a', 'b '] | map('trim') | join }} "
     "{{ ['1', '2'] | map('int') | sum }}", {"people": PEOPLE}),
    ("filter-select", "{{ [1, 2, 3, 4] | select('odd') | list }} {{ [1, 2, 3, 4] | reject('even') | list }} "
     "{{ [0, 1, '', 'a', none] | select | list }} {{ [1, 5, 9] | select('gt', 4) | list }}", {}),
    ("filter-selectattr", "{{ people | selectattr('admin') | map(attribute='name') | list }} "
     "{{ people | rejectattr('admin') | map(attribute='name') | list }} "
     "{{ people | selectattr('age', 'equalto', 31) | map(attribute='name') | list }} "
     "{{ people | selectattr('admin', 'defined') | list | length }} "
     "{{ people | selectattr('name', 'in', ['bob', 'Cy']) | map(attribute='age') | list }}", {"people": PEOPLE}),
    ("filter-items-dictsort", "{{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(by='value') }} "
     "{{ d | dictsort(reverse=true) }} {{ {'b': 1, 'A': 2, 'a': 3} | dictsort }} "
     "{{ {'b': 1, 'A': 2} | dictsort(case_sensitive=true) }} {{ nothing | items | list }}", {"d": {"z": 1, "a": 3, "m": 2}}),
    ("filter-min-max-sum", "{{ [3, 1, 2] | min }} {{ [3, 1, 2] | max }} {{ ['b', 'A'] | max }} {{ [1, 2, 3] | sum }} "
     "{{ people | sum(attribute='age') }} {{ people | max(attribute='age') }} {{ [1.5, 2] | sum(start=10) }}",
     {"people": PEOPLE}),
    ("filter-indent", "[{{ 'a\\nb\\n\\nc' | indent }}][{{ 'a\\nb' | indent(2, true) }}][{{ 'a\\n\\nb' | indent(2, blank=true) }}]"
     "[{{ 'a\\nb\\n' | indent('> ') }}]", {}),
    ("filter-misc", "{{ 'a<b>&\"' | escape }} {{ 'x' | safe }} {{ 'ab' | center(6) }}| {{ '%s-%d' | format('a', 3) }} "
     "{{ {'name': 'n'} | attr('name') }}[{{ people[0] | attr('name') }}] {{ [1, 'a'] | pprint }}", {"people": PEOPLE}),
    ("tojson", "{{ data | tojson }}", {"data": {"b": [1, 2.5, None, True], "a": "é\"\\\n\t\u0001", "c": {}, "d": []}}),
    ("tojson-options", "{{ data | tojson(indent=2) }}|{{ data | tojson(sort_keys=true) }}|"
     "{{ data | tojson(ensure_ascii=true) }}|{{ data | tojson(separators=(',', ':')) }}|{{ [] | tojson(indent=2) }}",
     {"data": {"z": [1, {"y": "ü🌍"}], "a": {}}}),
    ("tojson-indent-zero", "{{ [1, [2]] | tojson(indent=0) }}", {}),
    ("tojson-scalars", "{{ 'x' | tojson }} {{ 1.0 | tojson }} {{ none | tojson }} {{ (1, 2) | tojson }} {{ 1e-07 | tojson }}",
     {}),
    # Methods.
    ("unicode-case", "{% for s in words %}{{ s | upper }}|{{ s | lower }}|{{ s.title() }}|{{ s | capitalize }}|"
     "{{ s | title }}|{{ s.isupper() }}{{ s.islower() }}{{ s.isdigit() }}{{ s.isalnum() }};{% endfor %}",
     {"words": ["straße", "ŉ", "ǰx", "ΰ", "ﬁne", "İstanbul", "ΟΔΟΣ", "ΟΔΟΣ.", "Σ", "aΣb", "ȡ", "ºA", "¹²³", "Ⅻ",
                "ǅemal", "ǆ", "ﬃ ﬄ", "ⓐⓑ", "ᾳ", "hello-world (x)"]}),
    ("str-methods", "{{ 'a,b,,c'.split(',') }} {{ ' a  b '.split() }} {{ 'a,b,c'.split(',', 1) }} {{ 'a,b,c'.rsplit(',', 1) }} "
     "{{ 'hello'.startswith('he') }} {{ 'hello'.endswith(('x', 'lo')) }} {{ 'hello'.startswith('l', 2) }}", {}),
    ("str-strip-methods", "[{{ '\\n x \\n'.strip() }}][{{ '\\n x \\n'.strip('\\n') }}][{{ 'xxaxx'.lstrip('x') }}]"
     "[{{ 'xxaxx'.rstrip('x') }}][{{ '  a'.lstrip() }}]", {}),
    ("str-case-methods", "{{ 'hi there-you'.title() }} {{ 'HI'.lower() }} {{ 'hi'.upper() }} {{ 'hI tHERE'.capitalize() }} "
     "{{ 'abc'.replace('b', 'B') }} {{ 'aaa'.replace('a', 'b', 1) }}", {}),
    ("str-format", "{{ '{} and {}'.format('a', 'b') }} {{ '{1}{0}'.format('x', 'y') }} {{ '{name}!'.format(name='n') }} "
     "{{ '{:>5}|{:<4}|{:^5}|'.format('r', 'l', 'c') }} {{ '{:.2f} {:05d} {!r}'.format(3.14159, 42, 'q') }} "
     "{{ '{{literal}}'.format() }}", {}),
    ("str-find-count-join", "{{ 'hello'.find('l') }} {{ 'hello'.rfind('l') }} {{ 'hello'.find('z') }} "
     "{{ 'banana'.count('an') }} {{ '-'.join(['a', 'b']) }} {{ 'a\\nb\\r\\nc'.splitlines() }} {{ '42'.isdigit() }} "
     "{{ 'ab'.isalpha() }} {{ ' '.isspace() }} {{ '7'.zfill(3) }} {{ 'ab'.ljust(4, '.') }}|", {}),
    ("dict-methods", "{{ d.get('a') }} {{ d.get('z') }} {{ d.get('z', 'dflt') }} {{ d.keys() | list }} "
     "{{ d.values() | list }} {{ d.items() | list }}", {"d": {"a": 1, "b": 2}}),
    ("list-methods", "{{ [1, 2, 2].count(2) }} {{ ['a', 'b'].index('b') }}", {}),
    ("range-global", "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(3, 0, -1) | list }} {{ range(0) | list }}",
     {}),
    ("dict-global", "{{ dict(a=1, b='x') }} {{ dict([('k', 1)]) }}", {}),
    ("undefined-in-concat-and-print", "[{{ nothing }}][{{ nothing ~ 'x' }}][{{ nothing | string }}]"
     "[{{ nothing | upper }}]", {}),
    ("loop-filter-no-loop-var", "{% for x in [1, 2, 3] if x > 1 %}{{ loop.index }}/{{ loop.length }} {% endfor %}", {}),
    ("set-then-output-in-loop", "{% for m in ms %}{% set role = 'model' if m.role == 'assistant' else m.role %}"
     "{{ role }} {% endfor %}", {"ms": MESSAGES}),
    ("unknown-filter-deferred-in-if", "{% if false %}{{ x | nosuch }}{{ x is nosuch }}{% endif %}ok", {}),
    ("unknown-filter-deferred-in-inline-if", "{{ (x | nosuch) if false else 'ok' }}", {}),
    ("python-colon", "{% if true: %}a{% elif false: %}b{% else: %}c{% endif %}{% for x in [1]: %}{{ x }}{% else: %}"
     "{% endfor %}{% macro m(): %}M{% endmacro %}{{ m() }}", {}),
    ("undefined-is-callable", "{{ nothing is callable }}", {}),
    ("lazy-map-on-empty", "{{ [] | map(bogus=1) | list }}{{ [] | selectattr() | list }}", {}),
    # Errors Hugging Face's jinja2 raises too.
    ("refused-unknown-filter-in-unreached-loop", "{% for x in [] %}{{ x | nosuch }}{% endfor %}", {}),
    ("refused-unknown-filter-in-loop-inside-if", "{% if false %}{% for x in [] %}{{ x | nosuch }}{% endfor %}{% endif %}",
     {}),
    ("refused-leading-zero", "{{ 07 }}", {}),
    ("refused-sort-reverse-string", "{{ [2, 1] | sort('yes') }}", {}),
    ("comment-open-at-end", "a {#", {}),
    ("refused-chained-is", "{{ x is defined is none }}", {}),
    ("refused-is-then-if", "{{ x is defined if true else 1 }}", {}),
    ("refused-raise-exception", "{{ raise_exception('bad input') }}", {}),
    ("refused-undefined-attribute", "{{ nothing.attr }}", {}),
    ("refused-undefined-arithmetic", "{{ nothing + 1 }}", {}),
    ("refused-type-error", "{{ 1 + 'a' }}", {}),
    ("refused-list-append", "{% set l = [] %}{{ l.append(1) }}", {}),
    ("refused-dict-update", "{% set d = {} %}{{ d.update({'a': 1}) }}", {}),
    ("refused-unknown-filter", "{{ 1 | nosuchfilter }}", {}),
    ("refused-split-filter", "{{ 'a b' | split }}", {}),
    ("refused-range-too-big", "{{ range(200000) | length }}", {}),
    ("refused-zero-division", "{{ 1 // 0 }}", {}),
    ("refused-unclosed-if", "{% if true %}open", {}),
    ("refused-bad-expression", "{{ 1 + }}", {}),
    ("refused-unknown-tag", "{% frobnicate %}", {}),
    ("refused-macro-extra-argument", "{% macro f(a) %}{{ a }}{% endmacro %}{{ f(1, 2) }}", {}),
    ("refused-namespace-attribute-on-dict", "{% set d = {} %}{% set d.x = 1 %}", {}),
    ("refused-compare-mixed", "{{ 1 < 'a' }}", {}),
    ("refused-items-on-list", "{{ [1] | items | list }}", {}),
]


def render_all():
    env = make_environment()
    out = []
    for name, source, variables in CASES:
        case = {"name": name, "template": source, "vars": variables}
        try:
            case["expected"] = env.from_string(source).render(**variables)
            if name.startswith("refused-"):
                raise SystemExit(f"case '{name}' is meant to be refused, but jinja2 rendered it")
        except SystemExit:
            raise
        except Exception as error:
            if not name.startswith("refused-"):
                raise SystemExit(f"case '{name}' failed in jinja2: {type(error).__name__}: {error}")
            case["refused"] = f"{type(error).__name__}: {error}"
        out.append(case)
    return {"note": "generated by tests/peers/template_cases.py --write", "cases": out}


def outcome(case):
    """What must agree: the rendered text, or that jinja2 refused (its message varies between versions)."""
    return (case["name"], case["template"], case["vars"], case.get("expected"), "refused" in case)


def main():
    parser = argparse.ArgumentParser()
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true")
    mode.add_argument("--check", action="store_true")
    parser.add_argument("--root", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    args = parser.parse_args()
    path = os.path.join(args.root, "tests", "fixtures", "templates", "language_cases.json")
    fresh = render_all()
    if args.write:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(fresh, f, ensure_ascii=False, indent=1)
            f.write("\n")
        print(f"wrote {len(fresh['cases'])} cases to {path}")
        return
    with open(path, encoding="utf-8") as f:
        committed = json.load(f)
    if [outcome(c) for c in committed["cases"]] != [outcome(c) for c in fresh["cases"]]:
        for old, new in zip(committed["cases"], fresh["cases"]):
            if outcome(old) != outcome(new):
                print(f"case '{new['name']}' differs: committed {old.get('expected', old.get('refused'))!r}, "
                      f"jinja2 gives {new.get('expected', new.get('refused'))!r}", file=sys.stderr)
        sys.exit(f"{path} is not what jinja2 renders; run tests/peers/template_cases.py --write")
    print(f"{len(fresh['cases'])} language cases agree with jinja2 {__import__('jinja2').__version__}")


if __name__ == "__main__":
    main()
