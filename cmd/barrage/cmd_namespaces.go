package main

import (
	"context"
	"crypto/ed25519"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/google/uuid"

	"github.com/barrage-load/barrage/api"
	"github.com/barrage-load/barrage/internal/registry"
)

func runNamespaces(ctx context.Context, e env, args []string) error {
	sub := map[string]func(context.Context, env, []string) error{
		"create": runNamespacesCreate, "list": runNamespacesList, "add-key": runNamespacesAddKey,
		"add-owner": runNamespacesOwner(true), "remove-owner": runNamespacesOwner(false),
	}
	return dispatch(ctx, e, "namespaces", sub, args)
}

func runNamespacesCreate(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "namespaces create", "NAME")
	name, err := positionalArg(fs, args)
	if err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	res, err := cl.ClaimNamespaceWithResponse(ctx, api.NamespaceRequest{Name: name})
	if err != nil {
		return err
	}
	if res.JSON201 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "namespace %s is yours; register the key that signs its versions with `barrage namespaces add-key %s`\n", name, name)
	return nil
}

func runNamespacesList(ctx context.Context, e env, args []string) error {
	if err := parseFlags(newFlags(e, "namespaces list", ""), args, 0); err != nil {
		return err
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	return printTable(e, "NAMESPACE\tRESERVED\tKEYS",
		func(*string) ([]api.Namespace, *string, error) {
			res, err := cl.ListNamespacesWithResponse(ctx)
			if err != nil {
				return nil, nil, err
			}
			if res.JSON200 == nil {
				return nil, nil, api.ProblemError(res.HTTPResponse, res.Body)
			}
			return res.JSON200.Items, nil, nil
		},
		func(n api.Namespace) string {
			var keys []string
			for _, k := range n.Keys {
				s := k.Id
				if k.RetiredAt != nil {
					s += " (retired)"
				}
				keys = append(keys, s)
			}
			return fmt.Sprintf("%s\t%v\t%s", n.Name, n.Reserved, orDash(strings.Join(keys, ", ")))
		})
}

// runNamespacesAddKey registers the public half of the author's signing key on a namespace,
// with the key's proof that its holder registers it there.
func runNamespacesAddKey(ctx context.Context, e env, args []string) error {
	fs := newFlags(e, "namespaces add-key", "NAME [--key FILE] [--print]")
	key := fs.String("key", "", "the private key whose public half to register (default: signing-key.pem in the config folder, as plugin keygen writes it)")
	printOnly := fs.Bool("print", false, "print the public key and the proof of holding it, to register in the portal, and register nothing")
	name, err := positionalArg(fs, args)
	if err != nil {
		return err
	}
	priv, err := loadSigningKey(e, *key)
	if err != nil {
		return err
	}
	req := api.SigningKeyRequest{PublicKey: registry.PublicKey(priv.Public().(ed25519.PublicKey)).String(), Proof: registry.ProveKey(priv, name)}
	if *printOnly {
		fmt.Fprintf(e.stdout, "public key: %s\nproof: %s\n", req.PublicKey, base64.StdEncoding.EncodeToString(req.Proof))
		return nil
	}
	cl, _, err := apiClient(ctx, e, true)
	if err != nil {
		return err
	}
	res, err := cl.AddSigningKeyWithResponse(ctx, name, req)
	if err != nil {
		return err
	}
	if res.JSON201 == nil {
		return api.ProblemError(res.HTTPResponse, res.Body)
	}
	fmt.Fprintf(e.stdout, "key %s signs the versions of %s\n", res.JSON201.Id, name)
	return nil
}

// runNamespacesOwner adds (add) or removes a co-owner of one of your namespaces, named by
// their user id (which `barrage me` shows them).
func runNamespacesOwner(add bool) func(context.Context, env, []string) error {
	return func(ctx context.Context, e env, args []string) error {
		verb := map[bool]string{true: "add-owner", false: "remove-owner"}[add]
		fs := newFlags(e, "namespaces "+verb, "NAME USER_ID  (the user's id, as `barrage me` shows it)")
		if err := parseFlags(fs, args, 2); err != nil {
			return err
		}
		name := fs.Arg(0)
		user, err := uuid.Parse(fs.Arg(1))
		if err != nil {
			return usageError(fmt.Errorf("user id %q: %w", fs.Arg(1), err))
		}
		cl, _, err := apiClient(ctx, e, true)
		if err != nil {
			return err
		}
		var ns *api.Namespace
		if add {
			res, err := cl.AddNamespaceOwnerWithResponse(ctx, name, user)
			if err != nil {
				return err
			}
			if ns = res.JSON200; ns == nil {
				return api.ProblemError(res.HTTPResponse, res.Body)
			}
		} else {
			res, err := cl.RemoveNamespaceOwnerWithResponse(ctx, name, user)
			if err != nil {
				return err
			}
			if ns = res.JSON200; ns == nil {
				return api.ProblemError(res.HTTPResponse, res.Body)
			}
		}
		owners := "(you are no longer one of them)"
		if ns.Owners != nil {
			ids := make([]string, len(*ns.Owners))
			for i, id := range *ns.Owners {
				ids[i] = id.String()
			}
			owners = strings.Join(ids, ", ")
		}
		fmt.Fprintf(e.stdout, "namespace %s: owners %s\n", name, owners)
		return nil
	}
}
