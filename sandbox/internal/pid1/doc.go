// Package pid1 is what runs inside a sandbox before the job's code: pid 1
// of a sandbox started from scratch (Main, entered through
// sandbox.MaybeInit when the gateway binary is re-executed with
// wire.InitVerb) and the set-up every job process gets, from scratch or
// from the template: the private root (mounts), the user namespace's low
// limits, loopback and the egress listener, and the restrictions (the
// capability bounding set, Landlock, the seccomp filter). The template's
// job process applies the same Landlock and seccomp rules, computed here
// and handed to it by the gateway (TemplateLandlock, TemplateSeccomp).
//
// Nothing here knows the gateway: it reads wire.InitConfig and answers
// wire.Status events. Package sandbox is its only user.
package pid1
