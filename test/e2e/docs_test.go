package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The documentation's contract, checked without any service: the root README
// stays a page a newcomer reads in five minutes, and every relative link in
// the READMEs and docs/ points at a file (and a heading) that exists.

const readmeMaxLines = 150

func TestReadmeIsShort(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile(filepath.Join(repoRoot(t), "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(b), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, want at most %d: details belong in docs/ or a service's README", n, readmeMaxLines)
	}
}

var (
	fence    = regexp.MustCompile("(?s)```.*?```")
	mdLink   = regexp.MustCompile(`\]\(([^)\s]+)\)`)
	heading  = regexp.MustCompile(`(?m)^#{1,6} +(.+?) *$`)
	notInTag = regexp.MustCompile(`[^\p{L}\p{N} _-]`)
)

func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	root := repoRoot(t)
	var pages []string
	for _, pattern := range []string{"README.md", "*/README.md", "services/*/README.md", "docs/*.md"} {
		m, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, m...)
	}
	if len(pages) < 8 {
		t.Fatalf("found %d pages, want the READMEs and docs/", len(pages))
	}
	for _, page := range pages {
		b, err := os.ReadFile(page)
		if err != nil {
			t.Fatal(err)
		}
		name, _ := filepath.Rel(root, page)
		for _, m := range mdLink.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
			link := m[1]
			if strings.Contains(link, "://") || strings.HasPrefix(link, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(link, "#")
			target := page
			if path != "" {
				target = filepath.Join(filepath.Dir(page), path)
			}
			if _, err := os.Stat(target); err != nil {
				t.Errorf("%s: link %s: no such file", name, link)
				continue
			}
			if anchor != "" && strings.HasSuffix(target, ".md") && !hasAnchor(t, target, anchor) {
				t.Errorf("%s: link %s: no such heading", name, link)
			}
		}
	}
}

// hasAnchor reports whether the markdown file has a heading whose anchor, as
// GitHub makes it (lower case, punctuation dropped, spaces to hyphens), is
// anchor.
func hasAnchor(t *testing.T, file, anchor string) bool {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range heading.FindAllStringSubmatch(fence.ReplaceAllString(string(b), ""), -1) {
		text := strings.ReplaceAll(strings.ToLower(m[1]), "`", "")
		if strings.ReplaceAll(notInTag.ReplaceAllString(text, ""), " ", "-") == anchor {
			return true
		}
	}
	return false
}
