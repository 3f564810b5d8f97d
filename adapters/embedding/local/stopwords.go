package local

// isStopword reports whether the lowercased word w is an English function
// word: articles, pronouns, auxiliaries, common prepositions and the
// question words that open most support questions ("how do I ..."). Without
// IDF these would otherwise make every text look alike. Particles that change
// a support question's meaning stay content words: "not", "no", "out", "off",
// "up", "down", "before", "after" ("log out" is not "log in").
func isStopword(w []byte) bool {
	if len(w) > 7 {
		return false
	}
	switch string(w) {
	case "a", "an", "the", "and", "or", "but", "if", "so", "as", "than", "then",
		"of", "to", "in", "on", "at", "by", "for", "with", "from", "into", "about", "via",
		"is", "are", "was", "were", "be", "been", "being", "am",
		"do", "does", "did", "doing", "done",
		"have", "has", "had", "having",
		"can", "could", "will", "would", "shall", "should", "may", "might", "must",
		"i", "me", "my", "mine", "we", "us", "our", "ours",
		"you", "your", "yours", "he", "him", "his", "she", "her", "hers",
		"it", "its", "they", "them", "their", "theirs",
		"this", "that", "these", "those", "there", "here",
		"what", "which", "who", "whom", "whose", "how", "when", "where", "why",
		"i'm", "i've", "i'd", "i'll", "it's", "that's", "there's", "what's", "you're",
		"just", "also", "too", "very", "some", "any", "all", "each",
		"please", "hi", "hello", "hey", "thanks":
		return true
	}
	return false
}
