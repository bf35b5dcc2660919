package syncmanager

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrlruntimeclient "sigs.k8s.io/controller-runtime/pkg/client"
)

// localVerbs are what the sync controller does with the local type on the
// service cluster, cluster-wide (contract §8.3): it caches the copies of
// every namespace (list, watch) and reads and writes them; a controller
// that only processes deletions (synchronization disabled) only reads and
// deletes.
var (
	localVerbs        = []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	deletionOnlyVerbs = []string{"get", "list", "watch", "delete"}
)

// accessReviewTimeout bounds the access check before a controller starts.
const accessReviewTimeout = 10 * time.Second

// accessReviewer reports whether the agent may do verb on gr in every
// namespace.
type accessReviewer func(ctx context.Context, verb string, gr schema.GroupResource) (bool, error)

// selfSubjectAccessReviewer asks the service cluster with
// SelfSubjectAccessReviews, which every authenticated user may create.
func selfSubjectAccessReviewer(c ctrlruntimeclient.Client) accessReviewer {
	return func(ctx context.Context, verb string, gr schema.GroupResource) (bool, error) {
		review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
			ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: verb, Group: gr.Group, Resource: gr.Resource},
		}}
		if err := c.Create(ctx, review); err != nil {
			return false, fmt.Errorf("failed to review access to %s: %w", gr, err)
		}
		return review.Status.Allowed, nil
	}
}

// accessError names what the agent may not do on the service cluster.
type accessError struct {
	gr    schema.GroupResource
	verbs []string
}

func (e *accessError) Error() string {
	return fmt.Sprintf("the agent may not %s %s cluster-wide on the service cluster; grant it (for example with the chart's rbac.extraRules)",
		strings.Join(e.verbs, ", "), e.gr)
}

// checkAccess returns an *accessError listing the verbs the agent may not
// use on gr, nil when it may use all of them, or the error of a review that
// failed (the caller cannot tell then, and goes on).
func checkAccess(ctx context.Context, review accessReviewer, gr schema.GroupResource, verbs []string) error {
	ctx, cancel := context.WithTimeout(ctx, accessReviewTimeout)
	defer cancel()
	var denied []string
	for _, verb := range verbs {
		allowed, err := review(ctx, verb, gr)
		if err != nil {
			return err
		}
		if !allowed {
			denied = append(denied, verb)
		}
	}
	if len(denied) > 0 {
		return &accessError{gr: gr, verbs: denied}
	}
	return nil
}
