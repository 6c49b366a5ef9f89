a = iota 4
b = map c: x + 1
