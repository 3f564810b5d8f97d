// Every string the widget shows or announces: one table per language (the
// page's <html lang>; missing keys fall back to English). See docs/widget.md.
export const strings = {
	en: {
		conversation: 'Conversation',
		newConversation: 'New conversation',
		newConversationDone: 'Started a new conversation.',
		you: 'You',
		assistant: '{name}',
		person: '{name} (a person)',
		personNoName: 'Support team',
		inputLabel: 'Your message',
		inputPlaceholder: 'Ask a question…',
		send: 'Send',
		suggestions: 'Suggested questions',
		sources: 'Sources',
		feedbackUp: 'Helpful answer',
		feedbackDown: 'Not helpful',
		feedbackThanks: 'Thanks for your feedback.',
		feedbackFailed: 'Your feedback could not be saved.',
		talkToPerson: 'Talk to a person',
		offerHandoff: 'Would you like to talk to a person?',
		handoffTitle: 'Talk to a person',
		handoffIntro: 'Leave your name and email so the team can follow up.',
		handoffName: 'Name',
		handoffEmail: 'Email',
		handoffNobody: 'Nobody is available right now. Leave your email and we will reply.',
		handoffEmailRequired: 'Email (required)',
		handoffEmailNeeded: 'Please leave your email so we can reply.',
		handoffSubmit: 'Request a person',
		handoffCancel: 'Cancel',
		handoffUnavailable: 'Talking to a person is not available here.',
		handoffAlreadyHuman: 'A person is already in this conversation.',
		subtitleAI: 'AI assistant',
		status_HANDOFF_REQUESTED: 'Waiting for a person to join…',
		status_HUMAN: 'You are chatting with a person',
		status_RESOLVED: 'This conversation is resolved. Send a message to reopen it.',
		notice_AI: 'The assistant is back in this conversation.',
		notice_HANDOFF_REQUESTED: 'You asked for a person. Someone will join shortly.',
		notice_HUMAN: 'A person joined the conversation.',
		notice_RESOLVED: 'The conversation was marked as resolved.',
		errorGeneric: 'Something went wrong. Please try again.',
		errorNetwork: 'Could not reach the server. Check your connection and try again.',
		errorRateLimited: 'Too many requests. Please wait {seconds} seconds and try again.',
		errorTooLong: 'Your message is too long (at most {max} characters).',
		errorIdentity: 'Your sign-in could not be verified. Reload the page and try again.',
		errorAnswer: 'The answer could not be completed. Please try again.',
		answerInterrupted: 'This answer was interrupted before it was finished. Please ask again.',
		errorUnavailable: 'This chat is not available right now.',
		notSent: 'Not sent.',
		retry: 'Retry',
		poweredBy: 'Powered by Concierge',
		opensInNewTab: '(opens in a new tab)',
	},
};

// translator returns t(key, vars) for the language lang ("en", "pt-BR"...).
export function translator(lang) {
	const code = String(lang || 'en');
	const table = strings[code] || strings[code.split('-')[0]] || strings.en;
	return (key, vars) => {
		let s = table[key] ?? strings.en[key] ?? key;
		if (vars) s = s.replace(/\{(\w+)\}/g, (m, k) => (k in vars ? String(vars[k]) : m));
		return s;
	};
}
