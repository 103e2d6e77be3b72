package httpapi

import (
	"context"
	"errors"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/audit"
	"github.com/barrage-load/barrage/internal/barrage"
	"github.com/barrage-load/barrage/internal/registry"
)

func (s *server) ClaimNamespace(ctx context.Context, req api.ClaimNamespaceRequestObject) (api.ClaimNamespaceResponseObject, error) {
	ns, err := s.claimNamespace(ctx, req.Body.Name, false)
	if err != nil {
		return nil, err
	}
	return api.ClaimNamespace201JSONResponse(ns), nil
}

func (s *server) ReserveNamespace(ctx context.Context, req api.ReserveNamespaceRequestObject) (api.ReserveNamespaceResponseObject, error) {
	ns, err := s.claimNamespace(ctx, req.Body.Name, true)
	if errors.Is(err, barrage.ErrConflict) && req.Body.Reason != nil {
		// A user's: taken back, saying why.
		audit.Detail(ctx, "taken_back", true)
		audit.Detail(ctx, "reason", *req.Body.Reason)
		var p barrage.Principal
		if p, err = principal(ctx); err == nil {
			var taken barrage.Namespace
			taken, err = s.market.TakeBackNamespace(ctx, p, req.Body.Name, *req.Body.Reason)
			ns = toAPINamespace(taken)
		}
	}
	if err != nil {
		return nil, err
	}
	return api.ReserveNamespace201JSONResponse(ns), nil
}

func (s *server) claimNamespace(ctx context.Context, name string, reserve bool) (api.Namespace, error) {
	p, err := principal(ctx)
	if err != nil {
		return api.Namespace{}, err
	}
	audit.Object(ctx, name)
	ns, err := s.market.ClaimNamespace(ctx, p, name, reserve)
	return toAPINamespace(ns), err
}

func (s *server) ListNamespaces(ctx context.Context, _ api.ListNamespacesRequestObject) (api.ListNamespacesResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	list, err := s.market.Namespaces(ctx, p)
	if err != nil {
		return nil, err
	}
	out := api.ListNamespaces200JSONResponse{Items: make([]api.Namespace, len(list))}
	for i, ns := range list {
		out.Items[i] = toAPINamespace(ns)
	}
	return out, nil
}

func (s *server) ListReservedNamespaces(ctx context.Context, _ api.ListReservedNamespacesRequestObject) (api.ListReservedNamespacesResponseObject, error) {
	list, err := s.market.ReservedNamespaces(ctx)
	if err != nil {
		return nil, err
	}
	out := api.ListReservedNamespaces200JSONResponse{Items: make([]api.Namespace, len(list))}
	for i, ns := range list {
		out.Items[i] = toAPINamespace(ns)
	}
	return out, nil
}

func (s *server) GetNamespace(ctx context.Context, req api.GetNamespaceRequestObject) (api.GetNamespaceResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	ns, err := s.market.Namespace(ctx, p, req.Namespace)
	if err != nil {
		return nil, err
	}
	return api.GetNamespace200JSONResponse(toAPINamespace(ns)), nil
}

func (s *server) AddSigningKey(ctx context.Context, req api.AddSigningKeyRequestObject) (api.AddSigningKeyResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	k, err := s.market.AddSigningKey(ctx, p, req.Namespace, req.Body.PublicKey, req.Body.Proof)
	if err != nil {
		return nil, err
	}
	return api.AddSigningKey201JSONResponse(toAPISigningKey(k)), nil
}

func (s *server) RetireSigningKey(ctx context.Context, req api.RetireSigningKeyRequestObject) (api.RetireSigningKeyResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	k, err := s.market.RetireSigningKey(ctx, p, req.Namespace, req.KeyId)
	if err != nil {
		return nil, err
	}
	return api.RetireSigningKey200JSONResponse(toAPISigningKey(k)), nil
}

func (s *server) AddNamespaceOwner(ctx context.Context, req api.AddNamespaceOwnerRequestObject) (api.AddNamespaceOwnerResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	ns, err := s.market.AddNamespaceOwner(ctx, p, req.Namespace, req.UserId)
	if err != nil {
		return nil, err
	}
	return api.AddNamespaceOwner200JSONResponse(toAPINamespace(ns)), nil
}

func (s *server) RemoveNamespaceOwner(ctx context.Context, req api.RemoveNamespaceOwnerRequestObject) (api.RemoveNamespaceOwnerResponseObject, error) {
	p, err := principal(ctx)
	if err != nil {
		return nil, err
	}
	ns, err := s.market.RemoveNamespaceOwner(ctx, p, req.Namespace, req.UserId)
	if err != nil {
		return nil, err
	}
	return api.RemoveNamespaceOwner200JSONResponse(toAPINamespace(ns)), nil
}

func toAPINamespace(ns barrage.Namespace) api.Namespace {
	out := api.Namespace{Name: ns.Name, Reserved: ns.Reserved, CreatedAt: ns.CreatedAt, Keys: make([]api.SigningKey, len(ns.Keys))}
	if ns.ReservedReason != "" {
		out.ReservedReason = &ns.ReservedReason
	}
	if ns.Owners != nil {
		out.Owners = &ns.Owners
	}
	for i, k := range ns.Keys {
		out.Keys[i] = toAPISigningKey(k)
	}
	return out
}

func toAPISigningKey(k barrage.SigningKey) api.SigningKey {
	return api.SigningKey{Id: k.ID, PublicKey: registry.PublicKey(k.PublicKey).String(), CreatedAt: k.CreatedAt, RetiredAt: k.RetiredAt}
}
