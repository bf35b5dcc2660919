package syncmanager

import (
	"context"
	"fmt"
	"slices"
)

// throughEveryEndpoint runs release through urls, then through the
// endpoints the endpoint slice lists by then that it did not run through
// (a shard that joined while a long release ran), until no new one came:
// a release that ends has been through every endpoint there is.
func (r *reconciler) throughEveryEndpoint(ctx context.Context, urls []string, release func(urls []string) error) error {
	var done []string
	for len(urls) > 0 {
		if err := release(urls); err != nil {
			return err
		}
		done = append(done, urls...)
		now, err := r.endpoints(ctx)
		if err != nil {
			return fmt.Errorf("after releasing through %d endpoint(s): %w", len(done), err)
		}
		urls = slices.DeleteFunc(now, func(u string) bool { return slices.Contains(done, u) })
	}
	return nil
}
