"""Writes the Jinja unit cases (tests/jinja_oracle/cases.json): each template rendered by Jinja2 3.1 configured
as Hugging Face transformers configures it (ImmutableSandboxedEnvironment, trim_blocks, lstrip_blocks,
loopcontrols, tojson = json.dumps(ensure_ascii=False), raise_exception). tests/unit/jinja_test.cc renders the
same templates with arach's engine and compares; scripts/jinja-oracle.sh regenerates the file and checks it is
unchanged. Usage: python3 make_cases.py OUT.json"""
import json, sys, jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment
def env():
    def raise_exception(message): raise jinja2.exceptions.TemplateError(message)
    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)
    e = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=["jinja2.ext.loopcontrols"])
    e.filters["tojson"] = tojson
    e.globals["raise_exception"] = raise_exception
    return e
V = {"msgs": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": " Yo "}],
     "d": {"b": 2, "a": 1, "n": None}, "s": "Héllo wörld", "n": 7, "f": 2.5, "l": [3, 1, 2], "t": True, "e": "", "u8": "naïve 日本",
     "tree": [{"n": "a", "c": [{"n": "a1"}, {"n": "a2", "c": [{"n": "a2x"}]}]}, {"n": "b", "c": [{"n": "b1"}]}, {"n": "c"}]}
cases = [
 # text, output, comments, whitespace control
 "plain text", "a{# comment #}b", "{{ 'x' }}", "{{ n }} {{ f }} {{ t }} {{ none }} {{ d }} {{ l }}",
 "a  {{- ' b ' -}}  c", "a\n{%- if true -%}\n b \n{%- endif -%}\nc", "line\n  {% if true %}\n  in\n  {% endif %}\nend",
 "  {%+ if true %}x{% endif %}", "{% if true %}\nx{% endif %}\n", "a\r\nb\r\n{{ 1 }}\n", "{{ 'a' }}\n\n",
 "x {# c #}\n  {# d #}\ny", "{{ '{{' }}",
 # if / elif / else
 "{% if n > 5 %}big{% elif n > 2 %}mid{% else %}small{% endif %}", "{% if e %}yes{% else %}no{% endif %}",
 "{% if missing %}y{% elif d %}d{% endif %}",
 # for loops and loop vars
 "{% for x in l %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}{{ loop.first }}{{ loop.last }}{{ loop.length }}|{% endfor %}",
 "{% for x in [] %}a{% else %}empty{% endfor %}", "{% for x in l if x > 1 %}{{ x }}:{{ loop.length }} {% endfor %}",
 "{% for k, v in d.items() %}{{ k }}={{ v }};{% endfor %}", "{% for x in l %}{% if x == 1 %}{% continue %}{% endif %}{{ x }}{% if x == 1 %}{% break %}{% endif %}{% endfor %}",
 "{% for x in l %}{% if loop.first %}[{% endif %}{{ x }}{% if not loop.last %},{% endif %}{% if loop.last %}]{% endif %}{% endfor %}",
 "{% for c in 'ab' %}{{ c }}.{% endfor %}", "{% for k in d %}{{ k }}{% endfor %}", "{% for m in msgs %}{{ m.role }}:{{ m['content'] }}/{% endfor %}",
 "{% for x in l %}{{ loop.previtem }}-{{ loop.nextitem }} {% endfor %}", "{% for x in l %}{{ loop.cycle('a','b') }}{% endfor %}",
 "{% for a in [1,2] %}{% for b in [3,4] %}{{ a }}{{ b }}{{ loop.index }} {% endfor %}{% endfor %}",
 "{% for (a, b) in [(1,2),(3,4)] %}{{ a + b }}{% endfor %}",
 # `loop` read only from statements nested in the body (a loop whose body never reads it makes none)
 "{% for a in [1,2] %}{% for b in [5,6] %}{{ b }}{% endfor %}{{ loop.index }};{% endfor %}",
 "{% for a in l %}{% if a > 1 %}{% for b in [0] %}{{ b }}{% endfor %}{{ loop.index }}{% endif %}{% endfor %}",
 "{% for a in l %}{% set x = loop.revindex %}{% filter upper %}{{ loop.cycle('a', 'b') }}{% endfilter %}{{ x }}{% endfor %}",
 "{% for a in l %}{% with y = loop.index0 %}{{ y }}{% endwith %}{% endfor %}",
 "{% for a in l %}{% macro m() %}{{ loop.index }}{% endmacro %}{{ m() }}{% endfor %}",
 # set, block set, namespace, scoping
 "{% set x = 1 %}{% set x = x + 1 %}{{ x }}", "{% set a, b = 1, 2 %}{{ a }}{{ b }}", "{% set x %}inner {{ n }}{% endset %}[{{ x }}]",
 "{% set ns = namespace(c=0, s='') %}{% for x in l %}{% set ns.c = ns.c + x %}{% set ns.s = ns.s ~ x %}{% endfor %}{{ ns.c }} {{ ns.s }}",
 "{% set x = 0 %}{% for i in l %}{% set x = x + i %}{{ x }}{% endfor %}/{{ x }}", "{% if true %}{% set y = 5 %}{% endif %}{{ y }}",
 # macros
 "{% macro greet(name, greeting='Hello') %}{{ greeting }}, {{ name }}!{% endmacro %}{{ greet('A') }} {{ greet('B', 'Hi') }} {{ greet(greeting='Yo', name='C') }}",
 "{% macro m(x) %}[{{ x }}{{ n }}]{% endmacro %}{% for i in [1,2] %}{{ m(i) }}{% endfor %}",
 "{% macro rec(k) %}{% if k > 0 %}{{ k }}{{ rec(k - 1) }}{% endif %}{% endmacro %}{{ rec(3) }}",
 # expressions
 "{{ 1 + 2 * 3 }} {{ (1 + 2) * 3 }} {{ 7 / 2 }} {{ 7 // 2 }} {{ -7 // 2 }} {{ 7 % 3 }} {{ -7 % 3 }} {{ 2 ** 8 }} {{ 2 ** 0.5 }} {{ -n }}",
 "{{ 'a' ~ 1 ~ none ~ t }} {{ 'ab' + 'cd' }} {{ [1] + [2] }} {{ 'x' * 3 }} {{ 1 + 2.5 }} {{ 1.5 * 2 }} {{ 10 / 4 }} {{ 1e3 }} {{ 0.1 + 0.2 }}",
 "{{ n == 7 }} {{ n != 7 }} {{ n < 8 }} {{ n <= 7 }} {{ n > 7 }} {{ n >= 7 }} {{ 1 < n < 10 }} {{ 'a' < 'b' }} {{ [1, 2] < [1, 3] }}",
 "{{ 'ell' in s }} {{ 3 in l }} {{ 'a' in d }} {{ 9 not in l }} {{ not t }} {{ t and n }} {{ e or 'fallback' }} {{ none or 0 }}",
 "{{ 'y' if t else 'n' }} {{ 'y' if e else 'n' }} [{{ 'only' if e }}]", "{{ d.a }} {{ d['b'] }} {{ d.missing }} {{ l[0] }} {{ l[-1] }} {{ l[9] }} {{ msgs[1].content }}",
 "{{ l[1:] }} {{ l[:2] }} {{ l[::-1] }} {{ l[::2] }} {{ s[1:4] }} {{ u8[::-1] }} {{ 'abcdef'[-3:] }}",
 "{{ [1, 'two', [3], {'k': none}] }} {{ {'x': 1, 'y': [true]} }} {{ (1, 2) }} {{ () }} {{ 'quote\\'s' }} {{ \"dq\\\"s\" }}",
 "{{ 'a' 'b' }} {{ '\\n' | length }} {{ '\\u00e9' }} {{ 1_000 }}",
 # tests
 "{{ n is defined }} {{ zz is defined }} {{ zz is undefined }} {{ none is none }} {{ d.n is none }} {{ s is string }} {{ n is number }} {{ f is number }}",
 "{{ d is mapping }} {{ l is mapping }} {{ l is iterable }} {{ s is iterable }} {{ n is iterable }} {{ l is sequence }} {{ t is boolean }} {{ n is boolean }}",
 "{{ t is true }} {{ t is false }} {{ false is false }} {{ 1 is true }} {{ n is odd }} {{ n is even }} {{ n is eq 7 }} {{ n is equalto 7 }} {{ n is ne(3) }}",
 "{{ 9 is divisibleby 3 }} {{ 2 is in [1, 2] }} {{ 'abc' is lower }} {{ 'ABC' is upper }} {{ n is not odd }} {{ n is integer }} {{ f is float }} {{ n is lt 9 }} {{ n is ge 7 }}",
 # filters
 "[{{ '  x y  ' | trim }}] [{{ 'xxhixx' | trim('x') }}] {{ s | upper }} {{ s | lower }} {{ 'hELLO wORLD' | capitalize }} {{ 'hello big-world (x' | title }}",
 "{{ l | length }} {{ s | length }} {{ d | count }} {{ l | first }} {{ l | last }} {{ s | first }} {{ l | join }} {{ l | join(', ') }} {{ msgs | join('|', attribute='role') }}",
 "{{ s | replace('l', 'L') }} {{ 'aaa' | replace('a', 'b', 2) }} {{ zz | default('dflt') }} {{ e | default('dflt') }} {{ e | default('dflt', true) }} {{ d.n | default('x') }}",
 "{{ 'ab' | list }} {{ d | list }} {{ [1, 2, 1, 'a', 'A'] | unique | list }} {{ l | sort }} {{ l | sort(reverse=true) }} {{ ['b', 'A', 'c'] | sort }} {{ ['b', 'A', 'c'] | sort(case_sensitive=true) }}",
 "{{ msgs | sort(attribute='role') | map(attribute='content') | list }} {{ l | reverse | list }} {{ 'abc' | reverse }} {{ ['a', 'b'] | map('upper') | list }}",
 "{{ l | select('odd') | list }} {{ l | reject('odd') | list }} {{ [0, 1, '', 'a'] | select | list }} {{ msgs | selectattr('role', 'equalto', 'user') | list }} {{ msgs | rejectattr('role', 'eq', 'user') | map(attribute='role') | list }}",
 "{{ d | tojson }} {{ l | tojson }} {{ s | tojson }} {{ msgs | tojson(indent=2) }} {{ {'a': 1.0, 'b': [none, true]} | tojson }} {{ 'q\"\\\\\\n\\t' | tojson }} {{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}",
 "{{ n | string }} {{ '42' | int + 1 }} {{ 'x' | int }} {{ '3.7' | int }} {{ 3.9 | int }} {{ '2.5' | float }} {{ n | float }} {{ -3 | abs }} {{ -2.5 | abs }} {{ l | sum }} {{ msgs | map(attribute='role') | list | length }}",
 "{{ d | items | list }} {{ d | dictsort }} {{ d | dictsort(reverse=true) }} {{ {'b': 1, 'a': 2} | dictsort(by='value') }}",
 "{{ '%s is %d years, %.2f%%' | format('Ann', 30, 99.5) }} {{ '%5s|%-5s|%03d' | format('a', 'b', 7) }} {{ 'x=%r' % 'y' }} {{ '%s and %s' % ('a', 'b') }}",
 "{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb' | indent(2, true) }}|{{ 'a\\n\\nb' | indent(1, blank=true) }}", "{{ '<b>&\"\\'' | e }} {{ '<i>' | escape }} {{ '<u>' | safe }}",
 # string and dict methods
 "{{ '  hi  '.strip() }}|{{ 'xxhi'.lstrip('x') }}|{{ 'hi\\n\\n'.rstrip() }}|{{ 'a,b,,c'.split(',') }}|{{ ' a  b '.split() }}|{{ 'a b c'.split(' ', 1) }}",
 "{{ s.startswith('Hé') }} {{ s.endswith('x') }} {{ s.startswith(('x', 'H')) }} {{ s.upper() }} {{ s.lower() }} {{ 'a-b'.replace('-', '+') }} {{ \"they're bill's\".title() }}",
 "{{ d.get('a') }} {{ d.get('zz') }} {{ d.get('zz', 'dv') }} {{ d.items() | list }} {{ d.keys() | list }} {{ d.values() | list }} {{ ', '.join(['a', 'b']) }} {{ 'abcabc'.count('b') }} {{ 'abc'.find('c') }}",
 # globals
 "{{ range(3) | list }} {{ range(1, 7, 2) | list }} {{ range(5, 0, -2) | list }} {{ dict(a=1, b='x') }} {{ namespace(a=1).a }}",
 # call, filter, with and raw blocks
 "{% macro m(a) %}{{ a }}[{{ caller() }}]{% endmacro %}{% call m(1) %}in {{ n }}{% endcall %}",
 "{% macro m() %}{{ caller(1, 2) }}|{{ caller(3) }}{% endmacro %}{% call(a, b=5) m() %}{{ a }}{{ b }}{% endcall %}",
 "{% macro m() %}{% set ns = namespace(f=caller()) %}{% set ns.f = ns.f ~ '!' %}{{ ns.f }}{% endmacro %}{% for i in l %}{% call m() %}{{ i }}{% endcall %}{% endfor %}",
 "{% macro fields(spec) %}{% set o = namespace(f=caller()) %}{% for k, v in spec | items %}{% if v is mapping %}{% call fields(v) %}<{{ k }}>{% endcall %}{% endif %}{% set o.f = o.f ~ k ~ ';' %}{% endfor %}{{ o.f }}{% endmacro %}{% call fields({'a': {'b': 1, 'c': {'d': 2}}, 'e': 3}) %}top:{% endcall %}",
 "{% macro m() %}[{{ caller() }}]{% endmacro %}{% macro n() %}{% call m() %}{{ caller() }}{% endcall %}{% endmacro %}{% call n() %}x{% endcall %}",
 "{% macro m() %}{{ caller() }}{% endmacro %}{% call m() %}{% set y = 1 %}{{ y }}{% endcall %}[{{ y }}]",
 "{% filter upper | replace('A', '-') %}abc {{ s }}{% endfilter %} {% filter trim %}  x  {% endfilter %}|",
 "{% filter upper %}{% for i in l %}a{{ i }}{% endfor %}{% set y = 1 %}{% endfilter %}[{{ y }}]",
 "{% set a = 5 %}{% with a = 1, b = a %}{{ a }}{{ b }}{% set a = 2 %}{{ a }}{% endwith %}{{ a }} {% with %}{% set x = 1 %}{{ x }}{% endwith %}[{{ x }}]",
 "{% for i in [1, 2, 3] %}{% with v = i * 2 %}{% if v > 4 %}{% break %}{% endif %}{{ v }}{% endwith %}{% endfor %}",
 "{%- raw -%}  {{ x }}  {%- endraw -%}  |  {% raw %}\n{{ x }}{% if %}{# #}\n  {% endraw %}\nz{%raw%}a{%endraw%}",
 "a\n  {%+ raw %}x{% endraw %}\n{% raw %}x\n   {%+ endraw %}y{% raw %}a{% endraw -%}\n\n b",
 # str, list and dict methods; tuples; escapes; membership in what is undefined
 "{{ 'a b c'.rsplit(' ', 1) }} {{ ' a b c  '.split(none, 1) }} {{ ' a b c  '.rsplit(none, 1) }} {{ 'é,ü,ö'.rsplit(',', 1) }} {{ 'aaa'.rsplit('aa') }} {{ 'a,b'.rsplit(',', 0) }}",
 "{{ 'a\\nb\\r\\nc\\rd\\x0be\\x85f\\u2028g\\n'.splitlines() }} {{ 'a\\nb\\n'.splitlines(true) }} {{ ''.splitlines() }}",
 "{{ 'pre_x'.removeprefix('pre_') }} {{ 'x.json'.removesuffix('.json') }} {{ 'ab'.removeprefix('abc') }} {{ 'aéa'.rfind('a') }} {{ 'héllo'.index('l') }} {{ 'hello'.rindex('l') }} {{ 'x'.rfind('y') }}",
 "{{ '{} {}'.format(1, 'x') }} {{ '{1}{0}'.format('a', 'b') }} {{ '{n}!'.format(n=none) }} {{ '{{x}} {}'.format(l) }} {{ '{!r}'.format('q') }} {{ '{0}{0}'.format(t) }}",
 "{{ l.index(2) }} {{ l.count(3) }} {{ (1, 2, 1).count(1) }} {{ l.copy() }} {{ d.copy() }}", "{{ 'x'.index('y') }}", "{{ l.index(9) }}", "{{ '{} {1}'.format(1, 2) }}",
 "{{ (1, 2) == [1, 2] }} {{ (1, 2) == (1, 2) }} {{ (1, 2) + (3,) }} {{ (1,) * 2 }} {{ [[1, 2]] == [(1, 2)] }} {{ d | items | list == [('b', 2), ('a', 1), ('n', none)] }}",
 "{{ '\\101\\60\\0' | tojson }} {{ '\\1234' }} {{ '\\8' }} {{ '\\777' | tojson }}",
 "{{ 'a' not in zz }} {{ 'a' in zz }} {{ 'x' is in zz }}", "{{ 'a' in d.zz.y }}",
 # tojson's parameters in transformers' order (ensure_ascii, indent, separators, sort_keys); min, max, round
 "{{ u8 | tojson(true) }} {{ {'k\u00e9': '\U0001F600\x7f\n'} | tojson(ensure_ascii=true) }} {{ l | tojson(false, 1) }} {{ d | tojson(indent='\t') }} {{ l | tojson(indent=0) }}",
 "{{ d | tojson(separators=(',', ':')) }} {{ d | tojson(none, none, ('', '=')) }} {{ d | tojson(none, none, none, true) }} {{ [d] | tojson(indent=true, sort_keys=true) }}",
 "{{ l | tojson(indent=[1]) }}", "{{ l | tojson(separators=',') }}",
 "{{ l | min }} {{ l | max }} {{ ['b', 'A', 'a'] | min }} {{ ['b', 'A', 'a'] | max }} {{ ['b', 'A'] | min(case_sensitive=true) }} {{ msgs | max(attribute='role') }} {{ [] | max is undefined }}",
 "{{ 2.567 | round(1) }} {{ 2.5 | round }} {{ 3.5 | round }} {{ 2.675 | round(2) }} {{ -1.5 | round }} {{ 3.5 | round(0, 'floor') }} {{ 3.21 | round(1, 'ceil') }} {{ 3 | round }} {{ 3 | round(1, 'floor') }} {{ true | round }}",
 # macros that take more than their parameters (varargs, kwargs); joiner; loop.changed
 "{% macro m(a) %}{{ a }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(1, 2, 3, b=4, c=[5]) }}|{{ m(1) }}|{{ m() }}",
 "{% macro m() %}{% for v in varargs %}{{ v }}{% endfor %}{% for k, v in kwargs.items() %}{{ k }}={{ v }}{% endfor %}{% endmacro %}{{ m('a', 'b', x=1) }}",
 "{% macro outer() %}{% macro inner() %}{{ varargs }}{% endmacro %}{{ inner(7) }}{% endmacro %}{{ outer(9) }} {% macro v(varargs) %}{{ varargs }}{% endmacro %}{{ v(2) }}",
 "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, 2) }}", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, b=2) }}",
 "{% set j = joiner(' | ') %}{% for x in l %}{{ j() }}{{ x }}{% endfor %} {% set k = joiner() %}{{ k() }}{{ k() }}{{ k() }}",
 "{% for x in [1, 1, 2, 2, 1] %}{{ loop.changed(x) }},{% endfor %} {% for m in msgs %}{% if loop.changed(m.role) %}[{{ m.role }}]{% endif %}{% endfor %} {% for x in l %}{{ loop.changed() }}{% endfor %}",
 # recursive loops (loop(items) renders the loop again, one level deeper; its filter and else too)
 "{% for x in tree recursive %}[{{ x.n }}:{{ loop.depth }}{{ loop.depth0 }}{{ loop.index }}/{{ loop.length }}{% if x.c %}{{ loop(x.c) }}{% endif %}]{% endfor %}",
 "{% for x in tree if x.n != 'b' recursive %}{{ x.n }}({{ loop(x.c or []) }}){% else %}-{% endfor %}",
 "{% for x in tree recursive %}{% set inner = loop(x.c or []) %}{{ x.n }}{{ inner | length }}{% if loop.first %}!{% endif %} {% endfor %}",
 "{% for x in l recursive %}{{ loop(l) }}{% endfor %}", "{% for x in l %}{{ loop(l) }}{% endfor %}",
 # batch, slice, truncate, center, wordcount
 "{{ l | batch(2) | list }} {{ l | batch(2, 'x') | list }} {{ l | batch(5, 0) | list }} {{ [] | batch(2) | list }} {{ 'abcde' | batch(2) | list }}",
 "{{ [1, 2, 3, 4] | slice(3) | list }} {{ [1, 2, 3, 4, 5] | slice(2, 0) | list }} {{ l | slice(5) | list }} {{ l | slice(4, '-') | list }} {{ zz | slice(2) | list }}",
 "{{ 'hello world foo' | truncate(9) }}|{{ 'hello world foo' | truncate(9, true) }}|{{ 'hello world foo' | truncate(11, false, '!') }}|{{ 'short' | truncate(3) }}|{{ 'hello world foo bar baz' | truncate(12, leeway=0) }}|{{ 'héllo wörld ünd' | truncate(8, leeway=0) }}|{{ 'nospacesatallhere' | truncate(8, leeway=0) }}|{{ s | truncate(255) }}",
 "[{{ 'ab' | center(7) }}] [{{ 'abc' | center(6) }}] [{{ 'abc' | center(8) }}] [{{ 'x' | center }}] [{{ 'toolong' | center(3) }}] [{{ 'é' | center(4) }}]",
 "{{ 'one two, three-four 日本 five_6 ½ x²' | wordcount }} {{ '' | wordcount }} {{ '  ' | wordcount }} {{ u8 | wordcount }} {{ zz | wordcount }} {{ zz | batch(2) | list }}[{{ zz | truncate(3) }}]",
 "{{ l | batch(0) | list }}", "{{ l | slice(0) | list }}", "{{ 'abcdef' | truncate(2) }}",
 # cycler
 "{% set c = cycler('a', 'b', 'c') %}{{ c.current }}{{ c.next() }}{{ c.next() }}{{ c.current }}{{ c.next() }}{{ c.next() }}|{{ c.reset() }}|{{ c.current }}{{ c.items }}",
 "{% set c = cycler(1) %}{% for x in l %}{{ c.next() }}{% endfor %}{{ c is callable }}{{ c.next is callable }}",
 "{% set ns = namespace(c=cycler('x', 'y')) %}{{ ns.c.next() }}{{ ns.c.next() }}{{ ns.c.next() }} {% set c = cycler('x', 'y') %}{% set n = c.next %}{{ n() }}{{ n() }}{{ c.current }}",
 "{{ cycler().next() }}",
 # *args and **kwargs in calls, filters and tests; a keyword for a parameter given by position
 "{{ '{} {}'.format(*l) }} {% macro m(a, b=2) %}{{ a }}{{ b }}{{ varargs }}{{ kwargs }}{% endmacro %}{{ m(*[1, 5, 6]) }} {{ m(0, **{'b': 7}) }} {{ m(*l, z=1) }} {{ dict(x=1, **d) }} {{ l | join(*[', ']) }} {{ n is divisibleby(*[7]) }} {{ m(*zz) }} {{ m(b=3, *[4]) }}",
 "{% macro m(a) %}{{ a }}{{ kwargs }}{% endmacro %}{{ m(1, a=2) }}", "{% macro m(a) %}{{ a }}{% endmacro %}{{ m(1, a=2) }}",
 "{{ 'x'.format(**l) }}", "{{ dict(x=1, **{'x': 2}) }}", "{{ dict(**namespace(a=1)) }}",
 "{{ dict(**{'a': 1}, **{'b': 2}) }}", "{{ range(*l, 1) }}", "{{ dict(**d, x=1) }}", "{{ dict(*l, *l) }}",
 # urlencode, xmlattr
 "{{ 'a b/c?d=é&~_.-' | urlencode }}|{{ {'q': 'a b/c', 'n': 1, 'é': none} | urlencode }}|{{ [('k', 'v w'), ['x', true]] | urlencode }}|{{ ['ab', 'cd'] | urlencode }}|{{ 3.5 | urlencode }}|{{ none | urlencode }}|{{ zz | urlencode }}|{{ {} | urlencode }}|{{ d | urlencode }}",
 r"""<a{{ {'class': 'x<y', 'title': 'say "hi" & \'bye\'', 'skip': none, 'gone': zz, 'n': 2, 'b': false} | xmlattr }}>|"""
 "{{ {'a': 1} | xmlattr(false) }}|{{ {'a': 1} | xmlattr(autospace=false) }}|{{ {} | xmlattr }}|{{ {'x': none} | xmlattr }}|",
 "{{ [1, 2] | urlencode }}", "{{ [(1, 2, 3)] | urlencode }}", "{{ 'ab' | xmlattr }}", "{{ zz | xmlattr }}",
 # groupby: (grouper, list) named tuples, sorted, case-insensitive by default, default for a missing attribute
 "{% for g in msgs | groupby('role') %}{{ g.grouper }}:{{ g.list | length }}{{ g['grouper'] }} {% endfor %}|{% for role, ms in msgs | groupby('role') %}{{ role }}={{ ms | map(attribute='content') | join(',') }};{% endfor %}|{{ msgs | groupby('role') | first }}",
 "{{ [{'a': 'X', 'b': 1}, {'a': 'x', 'b': 2}, {'a': 'Y', 'b': 3}, {'b': 4}] | groupby('a', default='x') }}|{{ [{'a': 'X'}, {'a': 'x'}] | groupby('a', case_sensitive=true) | map('first') | list }}|{{ [[2, 'b'], [1, 'a'], [2, 'c']] | groupby(0) | list }}|{{ [{'p': {'q': 2}}, {'p': {'q': 1}}] | groupby('p.q') | tojson }}|{{ [] | groupby('x') }}|{{ tree | groupby('n') | map(attribute='grouper') | join }}",
 "{{ [{'a': 1}, {'b': 2}] | groupby('a') }}", "{{ [{'a': 1}, {'a': 'x'}] | groupby('a') }}", "{{ l | groupby }}",
 # attr: getattr only (a dict's items are not attributes)
 "{{ d | attr('b') }}|{{ (d | attr('get'))('b') }}|{{ d | attr('items') is callable }}|{% set ns = namespace(v=3) %}{{ ns | attr('v') }}|{{ ('x' | attr('upper'))() }}|{{ (msgs | groupby('role') | first) | attr('grouper') }}|{{ (d | attr('nope')) is defined }}|{{ l | attr('count') is callable }}",
 "{{ zz | attr('x') }}",
 # errors (message compared only for raise_exception)
 "{{ raise_exception('custom failure') }}", "{% if msgs[0].role != 'system' %}{{ raise_exception('first must be system') }}{% endif %}",
 "{{ zz.attr }}", "{{ 'a' + 1 }}", "{{ 1 / 0 }}", "{{ n | length }}", "{% for x in n %}{% endfor %}", "{{ zz() }}",
]
def main():
    out = []
    for tpl in cases:
        try:
            out.append({"template": tpl, "text": env().from_string(tpl).render(**V)})
        except jinja2.exceptions.TemplateError as ex:
            if type(ex).__name__ == "TemplateError":  # raised by the template (raise_exception)
                out.append({"template": tpl, "raises": str(ex)})
            else:
                out.append({"template": tpl, "error": True})
        except Exception:
            out.append({"template": tpl, "error": True})
    with open(sys.argv[1], "w") as f:
        json.dump({"variables": V, "cases": out}, f, ensure_ascii=False, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
