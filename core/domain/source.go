package domain

import (
	"fmt"
	"net/url"
	"path"
	"strings"
	"time"
)

// SourceType is the kind of knowledge a source holds.
type SourceType string

// Source types.
const (
	SourceText SourceType = "text"
	SourceQA   SourceType = "qa"
	// SourceFile is an uploaded document (.md, .txt, .html, .pdf, .docx, .csv).
	SourceFile SourceType = "file"
	// SourceURL is one web page.
	SourceURL SourceType = "url"
	// SourceWebsite is a crawl from a start page or a sitemap.
	SourceWebsite SourceType = "website"
)

// SourceTypes lists every type, in the order error messages name them.
var SourceTypes = []SourceType{SourceText, SourceQA, SourceFile, SourceURL, SourceWebsite}

// Web reports whether the source's text comes from the web.
func (t SourceType) Web() bool { return t == SourceURL || t == SourceWebsite }

// SourceStatus is where a source is in indexing.
type SourceStatus string

// Source statuses.
const (
	SourcePending  SourceStatus = "PENDING"
	SourceIndexing SourceStatus = "INDEXING"
	SourceReady    SourceStatus = "READY"
	SourceFailed   SourceStatus = "FAILED"
)

// Source is one piece of an agent's knowledge.
type Source struct {
	ID          string
	WorkspaceID string
	AgentID     string
	Type        SourceType
	// Name is shown in citations as documentName. For Q&A it defaults to the question.
	Name     string
	Content  string
	Question string
	Answer   string
	Status   SourceStatus
	// StatusReason explains a FAILED status.
	StatusReason string
	ChunkCount   int
	TokenCount   int
	// URL is the page of a url source or the start page (or sitemap) of a
	// website source.
	URL string
	// Filename is a file source's original name; its extension picks the extractor.
	Filename string
	// File is a file source's content when it is created; lists and reads
	// leave it empty.
	File []byte
	// MaxPages and MaxDepth bound a website crawl.
	MaxPages int
	MaxDepth int
	// PageCount is how many pages a web source's last indexing read.
	PageCount int
	// ContentHash and Embedder identify what was last indexed, so identical
	// text is not indexed twice.
	ContentHash string
	Embedder    string
	// QuestionsBy names the question writer of the last indexing (see
	// IndexResult.QuestionsBy); a source indexed by another is indexed again.
	QuestionsBy string
	// Generation counts requests to (re)index the source; an index job
	// carries the generation it was enqueued for and gives way to newer ones.
	Generation int
	// IndexedAt is when the source last became READY; zero before.
	IndexedAt time.Time
	CreatedAt time.Time
	UpdatedAt time.Time
}

// Limits on sources.
const (
	MaxSourceNameLength    = 300
	MaxSourceContentLength = 500_000
	MaxQuestionLength      = 2000
	MaxAnswerLength        = 20000
	MaxSourceURLLength     = 2048
	// MaxSourceFileBytes caps an uploaded file.
	MaxSourceFileBytes = 20 << 20
	// DefaultMaxPages and DefaultMaxDepth bound a website crawl that does
	// not say; MaxCrawlPages and MaxCrawlDepth bound what it may ask.
	DefaultMaxPages = 50
	DefaultMaxDepth = 3
	MaxCrawlPages   = 1000
	MaxCrawlDepth   = 10
)

// FileExtensions are the file types a file source may have.
var FileExtensions = []string{".md", ".markdown", ".txt", ".html", ".htm", ".pdf", ".docx", ".csv"}

// Validate checks and normalises a source before it is stored.
func (s *Source) Validate() error {
	if err := validateTexts(textField{"name", s.Name}, textField{"content", s.Content}, textField{"question", s.Question},
		textField{"answer", s.Answer}, textField{"url", s.URL}, textField{"file", s.Filename}); err != nil {
		return err
	}
	s.Name = strings.TrimSpace(s.Name)
	if !s.Type.Web() && s.Type != "" {
		if s.URL != "" {
			return InvalidField("url", "is only for url and website sources")
		}
		if s.MaxPages != 0 || s.MaxDepth != 0 {
			return InvalidField("maxPages", "maxPages and maxDepth are only for website sources")
		}
	}
	if s.Type == SourceURL && (s.MaxPages != 0 || s.MaxDepth != 0) {
		return InvalidField("maxPages", "maxPages and maxDepth are only for website sources")
	}
	switch s.Type {
	case SourceText:
		if s.Name == "" {
			return InvalidField("name", "is required")
		}
		if strings.TrimSpace(s.Content) == "" {
			return InvalidField("content", "is required")
		}
		if len(s.Content) > MaxSourceContentLength {
			return InvalidField("content", "must be at most 500000 bytes")
		}
		s.Question, s.Answer = "", ""
	case SourceQA:
		s.Question = strings.TrimSpace(s.Question)
		s.Answer = strings.TrimSpace(s.Answer)
		if s.Question == "" {
			return InvalidField("question", "is required")
		}
		if s.Answer == "" {
			return InvalidField("answer", "is required")
		}
		if len([]rune(s.Question)) > MaxQuestionLength {
			return InvalidField("question", "must be at most 2000 characters")
		}
		if len([]rune(s.Answer)) > MaxAnswerLength {
			return InvalidField("answer", "must be at most 20000 characters")
		}
		if s.Name == "" {
			s.Name = s.Question
		}
		s.Content = ""
	case SourceFile:
		if err := s.validateFile(); err != nil {
			return err
		}
	case SourceURL, SourceWebsite:
		if err := s.validateWeb(); err != nil {
			return err
		}
	case "":
		return InvalidField("type", "is required")
	default:
		return InvalidField("type", "must be one of text, qa, file, url, website")
	}
	if len([]rune(s.Name)) > MaxSourceNameLength {
		return InvalidField("name", "must be at most 300 characters")
	}
	return nil
}

func (s *Source) validateFile() error {
	s.Filename = strings.TrimSpace(path.Base(strings.ReplaceAll(s.Filename, "\\", "/")))
	if s.Filename == "" || s.Filename == "." || s.Filename == "/" {
		return InvalidField("file", "is required (a multipart file field)")
	}
	ext := strings.ToLower(path.Ext(s.Filename))
	supported := false
	for _, e := range FileExtensions {
		supported = supported || e == ext
	}
	if !supported {
		return InvalidField("file", fmt.Sprintf("%q files are not supported; use .md, .txt, .html, .pdf, .docx or .csv", ext))
	}
	if len(s.File) == 0 {
		return InvalidField("file", "is empty")
	}
	if len(s.File) > MaxSourceFileBytes {
		return InvalidField("file", "must be at most 20 MiB")
	}
	if s.Name == "" {
		s.Name = s.Filename
	}
	s.Content, s.Question, s.Answer, s.URL = "", "", "", ""
	return nil
}

func (s *Source) validateWeb() error {
	s.URL = strings.TrimSpace(s.URL)
	if s.URL == "" {
		return InvalidField("url", "is required")
	}
	if len(s.URL) > MaxSourceURLLength {
		return InvalidField("url", "must be at most 2048 characters")
	}
	u, err := url.Parse(s.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return InvalidField("url", "must be an absolute http or https URL")
	}
	if u.User != nil {
		return InvalidField("url", "must not contain a user name or password")
	}
	u.Fragment = ""
	s.URL = u.String()
	if s.Type == SourceWebsite {
		if s.MaxPages == 0 {
			s.MaxPages = DefaultMaxPages
		}
		if s.MaxDepth == 0 {
			s.MaxDepth = DefaultMaxDepth
		}
		if s.MaxPages < 1 || s.MaxPages > MaxCrawlPages {
			return InvalidField("maxPages", fmt.Sprintf("must be between 1 and %d", MaxCrawlPages))
		}
		if s.MaxDepth < 1 || s.MaxDepth > MaxCrawlDepth {
			return InvalidField("maxDepth", fmt.Sprintf("must be between 1 and %d", MaxCrawlDepth))
		}
	} else {
		s.MaxPages, s.MaxDepth = 0, 0
	}
	if s.Name == "" {
		s.Name = u.Host + u.EscapedPath()
	}
	s.Content, s.Question, s.Answer, s.Filename, s.File = "", "", "", "", nil
	return nil
}
