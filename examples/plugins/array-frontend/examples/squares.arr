# squares.arr: the arr language (examples/plugins/array-frontend)
n = arg 0 default 1000        # the program's argument 0
a = iota n                    # a[i] = i
b = map a: x * x + 1          # one pgpu.spawn of n threads
c = zip a b: y - 2 * x + i % 7
print sum b
print sum c
print b[3]
print n * 2
