"""Viewing needs a login: a person is sent to the login page and back where they were going."""
from playwright.sync_api import expect

from tests.browser.browserkit import log_in


def test_a_person_logs_in_and_lands_where_they_were_going(anonymous_page, stack,
                                                          operator_account):
    anonymous_page.goto("/pods/")
    expect(anonymous_page).to_have_url(f"{stack.web_url}/accounts/login/?next=/pods/")
    log_in(anonymous_page, *operator_account)
    expect(anonymous_page).to_have_url(f"{stack.web_url}/pods/")
    expect(anonymous_page.locator("#pod-list")).to_be_visible()
    expect(anonymous_page.locator("header form.account")).to_contain_text(operator_account[0])


def test_a_wrong_password_is_refused_with_a_message(anonymous_page, stack, operator_account):
    anonymous_page.goto("/accounts/login/")
    log_in(anonymous_page, operator_account[0], "not-the-password")
    expect(anonymous_page.get_by_role("alert")).to_contain_text("do not match")
    anonymous_page.goto("/")
    expect(anonymous_page).to_have_url(f"{stack.web_url}/accounts/login/?next=/")
