import { PASSWORD_RESET_TTL_MINUTES, RESET_PAGE_PATH } from '../accounts/passwords.js';
import { escapeHtml as e, type PageOptions } from './html-page.js';

const errorLine = (error: string | undefined) => (error ? `<p id="reset-error" class="alert" role="alert"><strong>${e(error)}</strong></p>\n` : '');

/** Without a token (or with one that no longer works): asks for the account's email to send a link to. */
export function requestLinkPage(form: { email: string; error?: string; notice?: string }): PageOptions {
  const notice = form.notice ? `<p id="reset-notice" class="alert" role="alert"><strong>${e(form.notice)}</strong></p>\n` : '';
  return {
    title: 'Reset your password',
    withForm: true,
    body: `<h1>Reset your password</h1>
${notice}<p>Enter the email address of your Latchkey account. We send it a link to choose a new password; the link works once, for ${PASSWORD_RESET_TTL_MINUTES} minutes.</p>
${errorLine(form.error)}<form method="post" action="${RESET_PAGE_PATH}/request">
<p><label for="email">Email</label><br>
<input id="email" name="email" type="email" value="${e(form.email)}" required maxlength="254" autocomplete="email"></p>
<p><button class="button" id="send-link" type="submit">Send the link</button></p>
</form>`,
  };
}

export function linkSentPage(): PageOptions {
  return {
    title: 'Check your email',
    body: `<h1>Check your email</h1>
<p id="link-sent">If an account has this address, a link to choose a new password is on its way. It works once, for ${PASSWORD_RESET_TTL_MINUTES} minutes.</p>`,
  };
}

/** The emailed link's page: the new password, typed twice. The token rides in a hidden field. */
export function newPasswordPage(form: { token: string; error?: string }): PageOptions {
  return {
    title: 'Choose a new password',
    withForm: true,
    body: `<h1>Choose a new password</h1>
<p>At least 10 characters. Every session of your account is signed out when it is set.</p>
${errorLine(form.error)}<form method="post" action="${RESET_PAGE_PATH}">
<input type="hidden" name="token" value="${e(form.token)}">
<p><label for="new_password">New password</label><br>
<input id="new_password" name="new_password" type="password" required minlength="10" maxlength="200" autocomplete="new-password"></p>
<p><label for="repeat_password">The same password again</label><br>
<input id="repeat_password" name="repeat_password" type="password" required minlength="10" maxlength="200" autocomplete="new-password"></p>
<p><button class="button" id="set-password" type="submit">Set the new password</button></p>
</form>`,
  };
}

export function passwordSetPage(): PageOptions {
  return {
    title: 'Password changed',
    body: `<h1>Password changed</h1>
<p id="password-set">Your new password is set, and every session of your account was signed out. <a href="/portal">Sign in</a> with it.</p>
<p class="muted">API keys keep working: we emailed you a list of them to review.</p>`,
  };
}
