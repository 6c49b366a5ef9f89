a = iota 4
b = map c: x
d = zip a: x
e = map a: x + $
