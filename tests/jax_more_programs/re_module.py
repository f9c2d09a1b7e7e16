# Python's re module: search/match/fullmatch, groups, findall, finditer, sub
# (templates and functions), split, flags, compiled patterns, escape.
import re

m = re.search(r'(\w+)@(\w+)\.com', 'write to alice@example.com today')
print(m.group(0), m.group(1), m.group(2), m.groups(), m.span(), m.start(1), m.end(2))
print(re.match(r'\d+', '123abc').group(), re.match(r'\d+', 'abc123'), re.fullmatch(r'a|ab', 'ab').group())
print(re.findall(r'\d+', 'a1b22c333'), re.findall(r'(\w)=(\d)', 'a=1, b=2'), re.findall(r'x(\d)', 'x1 x2'))
print([mm.group() for mm in re.finditer(r'[aeiou]', 'education')])
print(re.sub(r'(\w+) (\w+)', r'\2 \1', 'hello world'), re.sub(r'\d', lambda mm: str(int(mm.group()) * 2), 'a1b2c3'))
print(re.sub(r'(?P<first>\w+)-(?P<second>\w+)', r'\g<second>+\g<first>', 'x-y z-w'), re.subn('a', 'b', 'banana'))
print(re.sub('a', 'o', 'banana', count=2))
print(re.split(r'[,;]\s*', 'a, b;c,  d'), re.split(r'(-)', 'a-b-c'), re.split(r'\s+', 'a b  c', maxsplit=1))
p = re.compile(r'(?P<key>[a-z]+):(?P<val>\d+)', re.IGNORECASE)
mm = p.search('ID: x KEY:42 more')
print(mm.group('key'), mm['val'], mm.groupdict(), p.pattern, p.groups, mm.lastindex)
print(p.findall('a:1 B:2'), bool(p.match('zz:9')), p.match('  zz:9'), p.search('x a:1', 2).group())
print(re.search('^b', 'a\nb', re.M).start(), re.search('a.b', 'a\nb', re.S).group() == 'a\nb', re.search('A', 'xa', re.I).span())
print(re.escape('a.b*c'), re.findall('é+', 'caféé x'), re.search('é(.)', 'caféz').span(1))
print(re.match(r'(a)(b)?', 'ac').groups(), re.match(r'(a)(b)?', 'ac').groups('-'), re.match(r'(a)(b)?', 'ac').span(2))
try:
    re.compile('(')
except re.error:
    print('error')
print(re.escape("a.b@c! d-e/f_g:h"), re.findall("a*", "baaa"), re.split("x*", "axbc"), re.sub("", "-", "abc"))
print(re.sub('x*', '-', 'abxd'), re.findall(r'\b\w', 'hi there you'))
