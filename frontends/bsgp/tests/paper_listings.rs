//! The paper's listings as printed (seeds/bsgp.txt, with `_` restored in
//! names): all parse without errors; those that are complete programs
//! check cleanly, the others fail only on the utility routines the paper
//! leaves out.

#![allow(clippy::unwrap_used)]

use pgpu_bsgp::check::check_source;
use pgpu_csubset::{Language, parse_source};

const LISTING1: &str = "
/*
input:
ib: pointer to element array
n: number of triangles
output:
pf: concatenated neighborhood list
hd: per-vertex list head pointer
temporary:
owner: associated vertex of each face
*/
findFaces(int* pf, int* hd, int* ib, int n){
  spawn(n*3){
    rk = thread.rank;
    f = rk/3; //face id
    v = ib[rk]; //vertex id
    thread.sortby(v);
    //allocate a temp list
    require
      owner = dtempnew[n]int;
    rk = thread.rank;
    pf[rk] = f;
    owner[rk] = v;
    barrier;
    if(rk==0||owner[rk-1]!=v)
      hd[v] = rk;
  }
}
";

const LISTING3: &str = "
findFaces(int* pf, int* hd, int* ib, int n){
  spawn(n*3){
    //superstep 1
    rk0 = thread.rank;
    f = rk0/3; v = ib[rk0];
    //BEGIN OF thread.sortby
    //allocate an internal temporary stream
    require
      sorted_id = dtempnew[thread.size]int;
    local_sort(sorted_id, v);
    barrier(RANK_REASSIGNED);
    require
      global_merge(sorted_id);
    //superstep 2
    //internal implementation of rank reassigning
    thread.oldrank = sorted_id[thread.rank];
    //END OF thread.sortby
    //allocate a temp list
    require
      owner = dtempnew[n]int;
    rk1 = thread.rank;
    pf[rk1] = f;
    owner[rk1] = v;
    barrier;
    //superstep 3
    if(rk1==0||owner[rk1-1]!=v)
      hd[v] = rk1;
  }
}
";

const LISTING5: &str = "
void test(int* a){
  spawn(1){
    //superstep 1
    v0 = a[0]; v1 = a[1];
    barrier;
    //superstep 2
    v2 = v0+v0;
    barrier;
    //superstep 3
    v3 = v1+v2;
    barrier;
    //superstep 4
    v4 = v3+v1;
    a[i] = v4;
  }
}
";

const LISTING6: &str = "
/*
extract numbers from plain text
input:
begin/end: offset to begin/end of regions
n: number of regions to parse
returns:
parsed numbers
*/
float* getNumbers(int* begin, int* end, int n){
  float* ret = NULL;
  spawn(n){
    id = thread.rank;
    s = begin[id]; e = end[id];
    pt = s+thread.fork(e-s+1);
    c = charAt(pt-1); c2 = charAt(pt);
    thread.kill(isDigit(c)||!isDigit(c2));
    require
      ret = dnew[thread.size]float;
    ret[thread.rank] = parseNumber(pt);
  }
  return ret;
}
";

const LISTING7: &str = "
inline int sort_idx(int x){
  require
    sorted_id = dtempnew[n]int;
  local_sort(sorted_id, x);
  barrier;
  require
    global_merge(sorted_id);
  return sorted_id[thread.rank];
}
sorter(int n){
  spawn(n){
    A = functionA();
    B = functionB();
    idxA = sort_idx(A);
    idxB = sort_idx(B);
    //more code
  }
}
";

const LISTING8: &str = "
sorter(int n){
  spawn(n){
    A = functionA();
    B = functionB();
    par{
      idxA = sort_idx(A);
      idxB = sort_idx(B);
    }
    //more code
  }
}
";

const LISTING9: &str = "
findFaces(int* pf, int* hd, int* ib, int n){
  spawn(n*3){
    rk = thread.rank;
    f = rk/3; //face id
    v = ib[rk]; //vertex id
    thread.sortby(v);
    rk = thread.rank;
    pf[rk] = f;
    barrier;
    if(rk==0||thread.get(rk-1,v)!=v)
      hd[v] = rk;
  }
}
";

#[test]
fn all_listings_parse() {
    for (name, text) in [
        ("1", LISTING1),
        ("3", LISTING3),
        ("5", LISTING5),
        ("6", LISTING6),
        ("7", LISTING7),
        ("8", LISTING8),
        ("9", LISTING9),
    ] {
        let (_, diags) = parse_source(text, Language::Bsgp);
        assert!(diags.is_empty(), "Listing {name}: {diags:?}");
    }
}

#[test]
fn complete_listings_check() {
    for text in [LISTING1, LISTING9] {
        let r = check_source("l.bsgp", text);
        assert!(r.diagnostics.is_empty(), "{:?}", r.diagnostics);
    }
}

#[test]
fn incomplete_listings_miss_only_the_omitted_routines() {
    let missing = |text: &str| -> Vec<String> {
        let r = check_source("l.bsgp", text);
        r.diagnostics
            .iter()
            .map(|d| format!("{} {}", d.code, d.message))
            .collect()
    };
    assert_eq!(
        missing(LISTING3),
        [
            "csubset::E021 unknown function `local_sort`",
            "csubset::E021 unknown function `global_merge`"
        ]
    );
    assert_eq!(missing(LISTING5), ["csubset::E020 unknown name `i`"]);
    assert_eq!(
        missing(LISTING6),
        [
            "csubset::E021 unknown function `charAt`",
            "csubset::E021 unknown function `charAt`",
            "csubset::E021 unknown function `isDigit`",
            "csubset::E021 unknown function `isDigit`",
            "csubset::E021 unknown function `parseNumber`"
        ]
    );
    assert_eq!(
        missing(LISTING8),
        [
            "csubset::E021 unknown function `functionA`",
            "csubset::E021 unknown function `functionB`"
        ]
    );
}
