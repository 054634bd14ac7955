package parse

import (
	"math"
	"strconv"

	"mvdan.cc/sh/v3/syntax"
)

// constArith evaluates an arithmetic expression made only of numeric
// constants, as bash does with 64-bit integers. It fails on variables,
// assignments, division by zero and the forms it does not model (base#n,
// shifts past 63), leaving the expansion dynamic.
func constArith(x syntax.ArithmExpr) (int64, bool) {
	switch x := x.(type) {
	case *syntax.Word:
		return arithNumber(x)
	case *syntax.ParenArithm:
		return constArith(x.X)
	case *syntax.UnaryArithm:
		v, ok := constArith(x.X)
		if !ok {
			return 0, false
		}
		switch x.Op {
		case syntax.Not:
			return boolInt(v == 0), true
		case syntax.BitNegation:
			return ^v, true
		case syntax.Plus:
			return v, true
		case syntax.Minus:
			return -v, true
		}
	case *syntax.BinaryArithm:
		if x.Op == syntax.TernQuest {
			c, ok := constArith(x.X)
			alt, isAlt := x.Y.(*syntax.BinaryArithm)
			if !ok || !isAlt || alt.Op != syntax.TernColon {
				return 0, false
			}
			if c != 0 {
				return constArith(alt.X)
			}
			return constArith(alt.Y)
		}
		a, okA := constArith(x.X)
		b, okB := constArith(x.Y)
		if !okA || !okB {
			return 0, false
		}
		return binaryArith(x.Op, a, b)
	}
	return 0, false
}

func binaryArith(op syntax.BinAritOperator, a, b int64) (int64, bool) {
	switch op {
	case syntax.Add:
		return a + b, true
	case syntax.Sub:
		return a - b, true
	case syntax.Mul:
		return a * b, true
	case syntax.Quo, syntax.Rem:
		if b == 0 || a == math.MinInt64 && b == -1 {
			return 0, false
		}
		if op == syntax.Quo {
			return a / b, true
		}
		return a % b, true
	case syntax.Pow:
		if b < 0 {
			return 0, false
		}
		r := int64(1)
		for ; b > 0; b >>= 1 {
			if b&1 == 1 {
				r *= a
			}
			a *= a
		}
		return r, true
	case syntax.Shl, syntax.Shr:
		if b < 0 || b > 63 {
			return 0, false
		}
		if op == syntax.Shl {
			return a << b, true
		}
		return a >> b, true
	case syntax.And:
		return a & b, true
	case syntax.Or:
		return a | b, true
	case syntax.Xor:
		return a ^ b, true
	case syntax.AndArit:
		return boolInt(a != 0 && b != 0), true
	case syntax.OrArit:
		return boolInt(a != 0 || b != 0), true
	case syntax.Eql:
		return boolInt(a == b), true
	case syntax.Neq:
		return boolInt(a != b), true
	case syntax.Lss:
		return boolInt(a < b), true
	case syntax.Leq:
		return boolInt(a <= b), true
	case syntax.Gtr:
		return boolInt(a > b), true
	case syntax.Geq:
		return boolInt(a >= b), true
	case syntax.Comma:
		return b, true
	}
	return 0, false
}

func boolInt(b bool) int64 {
	if b {
		return 1
	}
	return 0
}

// arithNumber reads a decimal, 0x hexadecimal or 0 octal constant.
func arithNumber(w *syntax.Word) (int64, bool) {
	if !isArithConst(w) {
		return 0, false
	}
	s := w.Lit()
	base := 10
	switch {
	case len(s) > 2 && (s[:2] == "0x" || s[:2] == "0X"):
		s, base = s[2:], 16
	case len(s) > 1 && s[0] == '0':
		s, base = s[1:], 8
	}
	u, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return 0, false
	}
	return int64(u), true
}
