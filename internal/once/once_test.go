package once

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPerGeneration(t *testing.T) {
	p := NewPerGeneration()
	obj := &metav1.ObjectMeta{UID: "a", Generation: 1}
	steps := []struct {
		name  string
		do    func()
		first bool
	}{
		{"new object", func() {}, true},
		{"same generation", func() {}, false},
		{"next generation", func() { obj.Generation = 2 }, true},
		{"forgotten", func() { p.Forget(obj) }, true},
		{"other object", func() { obj = &metav1.ObjectMeta{UID: "b", Generation: 2} }, true},
	}
	for _, s := range steps {
		s.do()
		if got := p.First(obj); got != s.first {
			t.Errorf("%s: First = %v, want %v", s.name, got, s.first)
		}
	}
}
