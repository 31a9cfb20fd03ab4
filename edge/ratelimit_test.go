package edge

import "testing"

func TestLimiter(t *testing.T) {
	l := newLimiter()
	now := int64(1_000_000_003_000) // 3 s into a window
	for i := 0; i < 10; i++ {
		if used, ok, _ := l.take(7, 10, 100, now); !ok || used != int64(10*(i+1)) {
			t.Fatalf("take %d: got used %d ok %v", i, used, ok)
		}
	}
	used, ok, retry := l.take(7, 1, 100, now)
	if ok || used != 100 || retry != 7 {
		t.Errorf("over budget: got used %d ok %v retry %d, want 100 false 7", used, ok, retry)
	}
	if _, ok, _ := l.take(8, 50, 100, now); !ok {
		t.Errorf("another key was refused")
	}
	if used, ok, _ := l.take(7, 1, 100, now+7_000); !ok || used != 1 {
		t.Errorf("next window: got used %d ok %v", used, ok)
	}
}

func TestIPKey(t *testing.T) {
	v4 := ipKey([]byte{127, 0, 0, 1})
	mapped := ipKey([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1})
	v6 := ipKey([]byte{0x20, 1, 0xd, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	if v4 != mapped || v4 == v6 {
		t.Errorf("got %x %x %x", v4, mapped, v6)
	}
}
