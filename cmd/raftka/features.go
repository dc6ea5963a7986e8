package main

// `raftka features describe | upgrade | downgrade`, as kafka-features.sh:
// describe reads ApiVersions' SupportedFeatures and FinalizedFeatures from
// one broker; upgrade and downgrade send UpdateFeatures, which any broker
// forwards to the active controller. --metadata takes a metadata.version
// by name ("0.2-IV0"), release ("0.2") or level ("28"); --feature
// NAME=LEVEL sets any feature; --release-version sets metadata.version to
// that release's level; --dry-run validates only; downgrade --unsafe asks
// for an unsafe downgrade (which Kafka 4.1, and raftka, refuse for
// metadata.version).

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/raftka/raftka/metadata"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/urfave/cli/v2"
)

func init() {
	change := func(downgrade bool) []cli.Flag {
		fs := []cli.Flag{
			bootstrapFlag(), bootstrapControllerFlag(), requestTimeoutFlag(),
			&cli.StringFlag{Name: "metadata", Usage: "the metadata.version to finalize: a name (0.2-IV0), release (0.2) or level (28)"},
			&cli.StringSliceFlag{Name: "feature", Usage: "NAME=LEVEL to finalize (repeatable)"},
			&cli.StringFlag{Name: "release-version", Usage: "finalize metadata.version at this raftka release's level"},
			&cli.BoolFlag{Name: "dry-run", Usage: "validate only; change nothing"},
		}
		if downgrade {
			fs = append(fs, &cli.BoolFlag{Name: "unsafe", Usage: "an unsafe (lossy) downgrade"})
		}
		return fs
	}
	register(&cli.Command{
		Name:  "features",
		Usage: "describe, upgrade or downgrade the cluster's finalized feature levels (kafka-features.sh)",
		Subcommands: []*cli.Command{
			{
				Name:   "describe",
				Usage:  "print each feature's supported range and finalized level",
				Flags:  []cli.Flag{bootstrapFlag(), bootstrapControllerFlag(), requestTimeoutFlag()},
				Action: featuresDescribe,
			},
			{
				Name:   "upgrade",
				Usage:  "raise finalized feature levels (after every node runs the new release)",
				Flags:  change(false),
				Action: func(c *cli.Context) error { return featuresChange(c, false) },
			},
			{
				Name:   "downgrade",
				Usage:  "lower finalized feature levels",
				Flags:  change(true),
				Action: func(c *cli.Context) error { return featuresChange(c, true) },
			},
		},
	})
}

func featuresDescribe(c *cli.Context) error {
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("request-timeout"))
	defer cancel()
	req := kmsg.NewPtrApiVersionsRequest()
	req.ClientSoftwareName, req.ClientSoftwareVersion = "raftka-cli", "1"
	resp, err := req.RequestWith(ctx, requestor(c, cl))
	if err != nil {
		return requestError(c, "describe features", err)
	}
	if err := responseError(resp.ErrorCode, nil); err != nil {
		return requestError(c, "describe features", err)
	}
	return printFeatures(c.App.Writer, resp)
}

// printFeatures prints kafka-features.sh describe's lines, sorted by name,
// metadata.version levels by name.
func printFeatures(w io.Writer, resp *kmsg.ApiVersionsResponse) error {
	finalized := map[string]int16{}
	for _, f := range resp.FinalizedFeatures {
		finalized[f.Name] = f.MaxVersionLevel
	}
	sf := slices.Clone(resp.SupportedFeatures)
	slices.SortFunc(sf, func(a, b kmsg.ApiVersionsResponseSupportedFeature) int { return strings.Compare(a.Name, b.Name) })
	for _, f := range sf {
		level := func(l int16) string {
			if f.Name == metadata.MetadataVersionFeature {
				return metadata.MetadataVersionName(l)
			}
			return strconv.Itoa(int(l))
		}
		fin := finalized[f.Name]
		if _, err := fmt.Fprintf(w, "Feature: %s\tSupportedMinVersion: %s\tSupportedMaxVersion: %s\tFinalizedVersionLevel: %s\tEpoch: %d\n",
			f.Name, level(f.MinVersion), level(f.MaxVersion), level(fin), resp.FinalizedFeaturesEpoch); err != nil {
			return err
		}
	}
	return nil
}

// featureUpdates turns the flags into UpdateFeatures entries, sorted by
// name.
func featureUpdates(metadataFlag, release string, features []string, downgrade, unsafe bool) ([]kmsg.UpdateFeaturesRequestFeatureUpdate, error) {
	typ := int8(metadata.UpgradeTypeUpgrade)
	if downgrade {
		typ = int8(metadata.UpgradeTypeSafeDowngrade)
		if unsafe {
			typ = int8(metadata.UpgradeTypeUnsafeDowngrade)
		}
	}
	levels := map[string]int16{}
	if metadataFlag != "" && release != "" {
		return nil, errors.New("--metadata and --release-version both set metadata.version: give one")
	}
	for _, v := range []string{metadataFlag, release} {
		if v == "" {
			continue
		}
		l, err := metadata.ParseMetadataVersion(v)
		if err != nil {
			return nil, err
		}
		levels[metadata.MetadataVersionFeature] = l
	}
	for _, f := range features {
		name, lv, ok := strings.Cut(f, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			return nil, fmt.Errorf("--feature %q: want NAME=LEVEL", f)
		}
		if _, dup := levels[name]; dup {
			return nil, fmt.Errorf("--feature %q: %s is set twice", f, name)
		}
		var l int16
		if name == metadata.MetadataVersionFeature {
			x, err := metadata.ParseMetadataVersion(strings.TrimSpace(lv))
			if err != nil {
				return nil, err
			}
			l = x
		} else {
			x, err := strconv.ParseInt(strings.TrimSpace(lv), 10, 16)
			if err != nil {
				return nil, fmt.Errorf("--feature %q: level %q is not a number", f, lv)
			}
			l = int16(x)
		}
		levels[name] = l
	}
	if len(levels) == 0 {
		return nil, errors.New("nothing to change: give --metadata, --release-version or --feature")
	}
	names := make([]string, 0, len(levels))
	for n := range levels {
		names = append(names, n)
	}
	slices.Sort(names)
	out := make([]kmsg.UpdateFeaturesRequestFeatureUpdate, 0, len(names))
	for _, n := range names {
		u := kmsg.NewUpdateFeaturesRequestFeatureUpdate()
		u.Feature, u.MaxVersionLevel, u.UpgradeType = n, levels[n], typ
		out = append(out, u)
	}
	return out, nil
}

func featuresChange(c *cli.Context, downgrade bool) error {
	updates, err := featureUpdates(c.String("metadata"), c.String("release-version"), c.StringSlice("feature"), downgrade, downgrade && c.Bool("unsafe"))
	if err != nil {
		return err
	}
	cl, err := newClient(c)
	if err != nil {
		return err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(c.Context, c.Duration("request-timeout"))
	defer cancel()
	req := kmsg.NewPtrUpdateFeaturesRequest()
	req.TimeoutMillis = int32(c.Duration("request-timeout").Milliseconds())
	req.FeatureUpdates, req.ValidateOnly = updates, c.Bool("dry-run")
	resp, err := req.RequestWith(ctx, requestor(c, cl))
	if err != nil {
		return requestError(c, "update features", err)
	}
	return printFeatureResult(c.App.Writer, updates, resp, downgrade, req.ValidateOnly)
}

// printFeatureResult prints kafka-features.sh's line per feature and
// fails when any update failed (all fail together).
func printFeatureResult(w io.Writer, updates []kmsg.UpdateFeaturesRequestFeatureUpdate, resp *kmsg.UpdateFeaturesResponse, downgrade, dry bool) error {
	verb := "upgraded"
	if downgrade {
		verb = "downgraded"
	}
	failErr := responseError(resp.ErrorCode, resp.ErrorMessage)
	for _, u := range updates {
		level := strconv.Itoa(int(u.MaxVersionLevel))
		if u.Feature == metadata.MetadataVersionFeature {
			level = metadata.MetadataVersionName(u.MaxVersionLevel)
		}
		var line string
		switch {
		case failErr != nil:
			line = fmt.Sprintf("Could not %s %s to %s. %v", strings.TrimSuffix(verb, "d"), u.Feature, level, failErr)
		case dry:
			line = fmt.Sprintf("%s can be %s to %s", u.Feature, verb, level)
		default:
			line = fmt.Sprintf("%s was %s to %s.", u.Feature, verb, level)
		}
		if _, err := fmt.Fprintln(w, line); err != nil {
			return err
		}
	}
	if failErr != nil {
		return fmt.Errorf("%d out of %d operation(s) failed", len(updates), len(updates))
	}
	return nil
}
