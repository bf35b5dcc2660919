package fence

import "context"

type contextKey struct{}

// NewContext returns ctx carrying f, for the controllers run under it.
func NewContext(ctx context.Context, f *Fence) context.Context {
	return context.WithValue(ctx, contextKey{}, f)
}

// Closed reports whether the fence ctx carries refuses writes now (false
// without a fence: no leader election). What a pass read while it is
// closed may be another leader's work under way (a copy whose record that
// leader deleted a moment ago), so such a pass reports nothing it found:
// no Event, no condition, no error.
func Closed(ctx context.Context) bool {
	f, _ := ctx.Value(contextKey{}).(*Fence)
	return f != nil && f.Check() != nil
}
