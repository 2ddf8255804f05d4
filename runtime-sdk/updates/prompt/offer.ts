/** What the user is asked about an update, and the three answers the spec allows. */
export interface UpdateOffer {
  appName: string;
  currentVersion: string;
  version: string;
  buildId: string;
  /** Plain text from the signed manifest, shown verbatim. */
  releaseNotes: string;
}

/** `later` is also what closing the dialog means: the same offer is made at the next launch. */
export type PromptChoice = 'install' | 'later' | 'skip';

/** The question's UI: the app may supply its own; `systemPrompt` is the default. */
export interface UpdatePrompt {
  ask(offer: UpdateOffer): Promise<PromptChoice>;
}

export const BUTTON_LABELS: Record<PromptChoice, string> = { install: 'Install now', later: 'Not right now', skip: 'Skip this version' };

export const dialogTitle = (offer: UpdateOffer) => `${offer.appName} update`;

export const headline = (offer: UpdateOffer) => `${offer.appName} ${offer.version} is available. You have ${offer.currentVersion}.`;

/** The headline and the notes as one text, for dialogs with a single message. */
export const dialogMessage = (offer: UpdateOffer) => (offer.releaseNotes ? `${headline(offer)}\n\n${offer.releaseNotes}` : headline(offer));
